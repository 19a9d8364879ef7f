"""The transformer that applies a distributed plan to the main script."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ms_fmk_transplt.distributed import snippets
from ms_fmk_transplt.distributed.map_location import with_map_location
from ms_fmk_transplt.records import Finding


@dataclass
class Plan:
    """Edits keyed by id() of the original nodes, and the findings."""

    before: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    after: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    calls: dict[int, cst.BaseExpression] = field(default_factory=dict)
    map_location: dict[int, cst.BaseExpression] = field(default_factory=dict)  # torch.load calls
    guard: set[int] = field(default_factory=set)
    delete: set[int] = field(default_factory=set)
    unwrap: set[int] = field(default_factory=set)
    loop_prefix: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    append: list[cst.BaseStatement] = field(default_factory=list)
    main_guard: int = 0  # id() of the `if __name__ == "__main__":` statement, 0 when none
    rank: str = "RANK"
    findings: list[Finding] = field(default_factory=list)


# what a statement becomes: itself, several statements, or nothing
_Statements = cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel


class Apply(cst.CSTTransformer):
    """Applies a plan; every lookup is by the original node, so nested edits compose."""

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def _around(self, original: cst.CSTNode, updated: cst.BaseStatement) -> _Statements:
        before = self.plan.before.get(id(original), [])
        after = self.plan.after.get(id(original), [])
        if id(original) in self.plan.guard:
            updated = _guard(updated, self.plan.rank)
        if id(original) in self.plan.delete:
            kept = [*before, *after]
            if kept and hasattr(updated, "leading_lines"):
                kept[0] = kept[0].with_changes(leading_lines=updated.leading_lines)
            return cst.FlattenSentinel(kept) if kept else cst.RemoveFromParent()
        leading = getattr(updated, "leading_lines", ())
        if before and leading and getattr(before[0], "leading_lines", None) == leading:
            updated = updated.with_changes(leading_lines=[])
        if not before and not after:
            return updated
        return cst.FlattenSentinel([*before, updated, *after])

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> _Statements:
        return self._around(original_node, updated_node)

    def leave_With(self, original_node: cst.With, updated_node: cst.With) -> _Statements:
        return self._around(original_node, updated_node)

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> _Statements:
        if self.plan.append and id(original_node) == self.plan.main_guard:
            body = updated_node.body
            updated_node = updated_node.with_changes(
                body=body.with_changes(body=[*body.body, *self.plan.append])
            )
            self.plan.append = []
        return self._around(original_node, updated_node)

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> _Statements:
        prefix = self.plan.loop_prefix.get(id(original_node))
        if prefix:
            body = updated_node.body
            updated_node = updated_node.with_changes(body=body.with_changes(body=[*prefix, *body.body]))
        return self._around(original_node, updated_node)

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try) -> _Statements:
        return self._around(original_node, updated_node)

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> _Statements:
        return self._around(original_node, updated_node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> _Statements:
        return self._around(original_node, updated_node)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> _Statements:
        return self._around(original_node, updated_node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        value = self.plan.map_location.get(id(original_node))
        if value is not None:
            updated_node = with_map_location(updated_node, value)
        return self.plan.calls.get(id(original_node), updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if id(original_node) in self.plan.unwrap:
            return snippets.unwrapped(original_node.value)
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self.plan.append:  # no `if __name__ == "__main__":` block: the end of the script
            return updated_node.with_changes(body=[*updated_node.body, *self.plan.append])
        return updated_node


def _guard(statement: cst.BaseStatement, rank: str) -> cst.BaseStatement:
    """`if RANK == 0:` around one statement, on the same line when it is a simple one."""
    test = snippets.expression(f"{rank} == 0")
    if isinstance(statement, cst.SimpleStatementLine):
        return cst.If(
            test=test,
            body=cst.SimpleStatementSuite(
                body=statement.body, trailing_whitespace=statement.trailing_whitespace
            ),
            leading_lines=statement.leading_lines,
        )
    leading = getattr(statement, "leading_lines", ())
    return cst.If(
        test=test,
        body=cst.IndentedBlock(body=[statement.with_changes(leading_lines=[])]),
        leading_lines=leading,
    )
