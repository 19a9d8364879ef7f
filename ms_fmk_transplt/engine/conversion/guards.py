"""Guarded calls: a call hook's `(f(x) if test else None)` standing alone on its line is written
`if test:` with `f(x)` in its body, as a person would write it; inside the body of an `if` that
already tests for the accelerator (`if torch.cuda.is_available():`, `torch.cuda.is_available() and`,
`... if torch.cuda.is_available() else ...`), the call needs no guard."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from ms_fmk_transplt.engine.syntax import NodeIndex, children

# tests that an accelerator exists, as the code is written and as it is converted
ACCELERATOR_TESTS = frozenset({"torch.cuda.is_available", "torch.accelerator.is_available"})


class GuardedStatements:
    """Remembers the guarded expressions the call hooks wrote, and turns a line holding only one into an `if`."""

    def __init__(self, nodes: NodeIndex, qualify: Callable[[cst.CSTNode], str | None]) -> None:
        self._made: set[int] = set()  # id() of IfExp nodes a call hook returned (alive during the transform)
        self._tested: set[int] = set()  # id() of original calls in the body of an accelerator test
        # what runs only once the test passed: an if's body, a conditional's value, and's right side
        guarded: list[tuple[cst.CSTNode, cst.CSTNode]] = [(n.test, n.body) for n in nodes.of(cst.If)]
        guarded += [(n.test, n.body) for n in nodes.of(cst.IfExp)]
        guarded += [
            (n.left, n.right) for n in nodes.of(cst.BooleanOperation) if isinstance(n.operator, cst.And)
        ]
        for test, body in guarded:
            if any(qualify(c.func) in ACCELERATOR_TESTS for c in _calls(test)):
                self._tested.update(id(c) for c in _calls(body))

    def record(self, original: cst.Call, result: cst.BaseExpression) -> cst.BaseExpression:
        """A call hook's result: a guard the enclosing `if` already makes is dropped, and an
        `x if test else None` is noted, as it may become a statement."""
        if not isinstance(result, cst.IfExp):  # a call hook's IfExp is a guard it wrote
            return result
        if id(original) in self._tested:
            return result.body
        if isinstance(result.orelse, cst.Name) and result.orelse.value == "None":
            self._made.add(id(result))
        return result

    def statement(self, line: cst.SimpleStatementLine) -> cst.BaseStatement:
        """The line as an `if` statement when it is one recorded guarded call, else as it is."""
        if len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
            return line
        value = line.body[0].value
        if not isinstance(value, cst.IfExp) or id(value) not in self._made:
            return line
        body = cst.SimpleStatementLine(
            body=[cst.Expr(value.body)], trailing_whitespace=line.trailing_whitespace
        )
        return cst.If(
            test=value.test.with_changes(lpar=[], rpar=[]),
            body=cst.IndentedBlock(body=[body]),
            leading_lines=line.leading_lines,
        )


def _calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every call under `node` (itself included)."""
    if isinstance(node, cst.Call):
        yield node
    for child in children(node):
        yield from _calls(child)
