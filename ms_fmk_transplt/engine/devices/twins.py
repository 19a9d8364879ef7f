"""Where the code already tells the NPU from CUDA: the alternatives of one dispatch.

A *place* is where the code picks one of several alternatives by one subject, each alternative
a *branch*:
- a dict literal: each key is a branch (`{"cuda": "nccl", "npu": "hccl"}`);
- an if/elif chain, and the `if` statements that directly follow one another in a block: each
  test is a branch, and the place is the subject it compares with literals (`dev == "cuda"`,
  `"cuda" in dev`, `dev in ("cuda", "xpu")`, `dev.startswith("cuda:")`, also inside `and`, `or`,
  `not`); tests of other subjects in the same chain are other places;
- a chain of conditional expressions (`a if dev == "cuda" else b if dev == "npu" else c`), alike;
- a `match`: each case is a branch (`case "cuda" | "mps":` is one).
A string rule keeps a literal whose place has, in another branch, the value the rule would write
(engine/literals/roles.py asks `rival`): the author already routes the NPU to the branch written for it,
and converting the CUDA one would duplicate a dict key or shadow that branch. Whole branches,
entries and list items beside an NPU alternative are kept by engine/devices/dispatch_sites.py before a
string rule sees them; this literal-level test remains for the places it alone finds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import libcst as cst

from ms_fmk_transplt.engine.devices.device_evidence import code_of, literals
from ms_fmk_transplt.engine.syntax import NodeIndex, if_runs

_TESTS = (cst.Equal, cst.NotEqual, cst.In, cst.NotIn, cst.Is, cst.IsNot)
_PREFIX_TESTS = ("startswith", "endswith")
Member = tuple[int, cst.SimpleString]  # (branch, literal)


class Places:
    """The places of one module's literals, each literal with its branch (built before the transform)."""

    def __init__(self) -> None:
        self._place: dict[int, list[Member]] = {}  # id(literal) -> the members of its place
        self._branch: dict[int, int] = {}  # id(literal) -> its branch in that place

    def scan(self, nodes: NodeIndex) -> None:
        """Find the module's places: dict literals, test chains and matches."""
        for table in nodes.of(cst.Dict):
            self._add([(i, [e.key]) for i, e in enumerate(table.elements) if isinstance(e, cst.DictElement)])
        for block in nodes.of_any(cst.Module, cst.IndentedBlock):
            for run in if_runs(block.body):
                self._chain([test for head in run for test in _elifs(head)])
        chained: set[int] = set()  # the inner links of a conditional-expression chain
        for choice in nodes.of(cst.IfExp):
            if id(choice) not in chained:
                tests = []
                link: cst.BaseExpression = choice
                while isinstance(link, cst.IfExp):
                    chained.add(id(link))
                    tests.append(link.test)
                    link = link.orelse
                self._chain(tests)
        for match in nodes.of(cst.Match):
            self._add([(i, _case_values(case.pattern)) for i, case in enumerate(match.cases)])

    def _chain(self, tests: list[cst.BaseExpression]) -> None:
        """The tests of one chain, grouped into one place per subject."""
        if len(tests) < 2:
            return
        by_subject: dict[str, list[tuple[int, list[cst.BaseExpression]]]] = {}
        for branch, test in enumerate(tests):
            for subject, side in _compared(test):
                by_subject.setdefault(subject, []).append((branch, [side]))
        for branches in by_subject.values():
            self._add(branches)

    def _add(self, branches: Iterable[tuple[int, list[cst.BaseExpression]]]) -> None:
        members: list[Member] = [
            (branch, literal)
            for branch, values in branches
            for value in values
            for literal in literals(value)
            if isinstance(literal, cst.SimpleString)
        ]
        if len({branch for branch, _ in members}) < 2:
            return
        for branch, literal in members:
            self._place.setdefault(id(literal), members)
            self._branch.setdefault(id(literal), branch)

    def rival(self, node: cst.CSTNode, wanted: Callable[[str], bool]) -> cst.SimpleString | None:
        """The first literal in another branch of `node`'s place whose value is `wanted`, else None."""
        members = self._place.get(id(node))
        if members is None:
            return None
        own = self._branch[id(node)]
        for branch, literal in members:
            value = literal.evaluated_value
            if branch != own and isinstance(value, str) and wanted(value):
                return literal
        return None


def _elifs(head: cst.If) -> Iterator[cst.BaseExpression]:
    """The tests of an if/elif chain."""
    link: cst.If | cst.Else | None = head
    while isinstance(link, cst.If):
        yield link.test
        link = link.orelse


def _compared(test: cst.BaseExpression) -> Iterator[tuple[str, cst.BaseExpression]]:
    """(subject, literal side) of each comparison of a subject with literals in a test."""
    if isinstance(test, cst.BooleanOperation):
        yield from _compared(test.left)
        yield from _compared(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _compared(test.expression)
    elif isinstance(test, cst.Comparison):
        left = test.left
        for target in test.comparisons:
            right = target.comparator
            if isinstance(target.operator, _TESTS):
                if _literal(right) and not _literal(left):
                    yield code_of(left), right
                elif _literal(left) and not _literal(right):
                    yield code_of(right), left
            left = right
    elif (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Attribute)
        and test.func.attr.value in _PREFIX_TESTS
        and test.args
        and _literal(test.args[0].value)
    ):
        yield code_of(test.func.value), test.args[0].value


def _literal(node: cst.BaseExpression) -> bool:
    """A string literal, or a tuple, list or set of them."""
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return bool(node.elements) and all(_literal(e.value) for e in node.elements)
    return isinstance(node, cst.SimpleString)


def _case_values(pattern: cst.MatchPattern) -> list[cst.BaseExpression]:
    """The literal values a case pattern matches (`case "cuda" | "mps":`)."""
    options = pattern.patterns if isinstance(pattern, cst.MatchOr) else [pattern]
    found: list[cst.BaseExpression] = []
    for option in options:
        if isinstance(option, cst.MatchOrElement):
            option = option.pattern
        if isinstance(option, cst.MatchValue):
            found.append(option.value)
    return found
