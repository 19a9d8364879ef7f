"""A file's own literals compared with what the project's function in another module returns.

`if kernel_kind() == "cuda":` says nothing by itself: the literal is a device when the function's
result is one, and a label when the result is. engine/devices/project_calls.py's `result_of` decides from
the whole project: a device when some module hands the result to a device API (the comparison is
then a device comparison, and engine/devices/dispatch_sites.py keeps it beside an NPU alternative:
`elif kernel_kind() == "npu":`), a label when the function returns only string literals that every
module only shows or compares (kept, not reported). The spellings read: `==`, `!=`, `in`, `is`
(and their negations) with the call or with a variable or `self.X` bound to it (`kind =
kernel_kind()`), `kind.startswith("cuda")`, and the cases of `match kernel_kind():`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import libcst as cst

from ms_fmk_transplt.engine.devices.device_flow import alias_key, choices
from ms_fmk_transplt.engine.syntax import NodeIndex

ResultOf = Callable[[cst.BaseExpression], "tuple[bool, str] | None"]  # a callee -> (a device?, why)
Mark = Callable[[Iterable[cst.BaseExpression], bool, str], None]  # (literals, a device?, why)
_TESTS = ("startswith", "endswith")


def mark_compared(nodes: NodeIndex, result_of: ResultOf, mark: Mark) -> None:
    """Mark the literals compared with a result of the project's function as it is: device or label."""
    bound: dict[str, cst.Call] = {}  # kind = kernel_kind(), self.kind = kernel_kind()
    for assign in nodes.of(cst.Assign):
        if isinstance(assign.value, cst.Call):
            for target in assign.targets:
                key = alias_key(target.target)
                if key is not None:
                    bound[key] = assign.value
    answers: dict[int, tuple[bool, str] | None] = {}

    def answer(node: cst.BaseExpression) -> tuple[bool, str] | None:
        key = alias_key(node)
        call = bound.get(key) if key is not None else node
        if not isinstance(call, cst.Call):
            return None
        if id(call) not in answers:
            answers[id(call)] = result_of(call.func)
        return answers[id(call)]

    for comparison in nodes.of(cst.Comparison):
        operands = [comparison.left, *(c.comparator for c in comparison.comparisons)]
        for operand in operands:
            for choice in choices(operand):
                found = answer(choice)
                if found is not None:
                    mark((o for o in operands if o is not operand), *found)
    for call in nodes.of(cst.Call):  # kernel_kind().startswith("cuda")
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _TESTS and call.args:
            found = answer(func.value)
            if found is not None:
                mark([call.args[0].value], *found)
    for match in nodes.of(cst.Match):
        found = answer(match.subject)
        if found is not None:
            mark(_case_values(match), *found)


def _case_values(match: cst.Match) -> Iterator[cst.BaseExpression]:
    """The literal values a match's cases test (`case "cuda":`, `case "cuda" | "hip":`)."""
    stack: list[cst.MatchPattern] = [case.pattern for case in match.cases]
    while stack:
        pattern = stack.pop()
        if isinstance(pattern, cst.MatchValue):
            yield pattern.value
        elif isinstance(pattern, cst.MatchOr):
            stack.extend(element.pattern for element in pattern.patterns)
        elif isinstance(pattern, cst.MatchAs) and pattern.pattern is not None:
            stack.append(pattern.pattern)
