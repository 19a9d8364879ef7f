"""Guarded calls written as statements: a call hook's `(f(x) if test else None)` standing alone on
its line is written `if test:` with `f(x)` in its body, as a person would write it."""

from __future__ import annotations

import libcst as cst


class GuardedStatements:
    """Remembers the guarded expressions the call hooks wrote, and turns a line holding only one into an `if`."""

    def __init__(self) -> None:
        self._made: set[int] = set()  # id() of IfExp nodes a call hook returned (alive during the transform)

    def record(self, result: cst.BaseExpression) -> None:
        """Note a call hook's result: an `x if test else None` may become a statement."""
        if (
            isinstance(result, cst.IfExp)
            and isinstance(result.orelse, cst.Name)
            and result.orelse.value == "None"
        ):
            self._made.add(id(result))

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
