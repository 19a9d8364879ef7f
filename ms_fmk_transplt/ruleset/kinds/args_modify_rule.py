"""ArgsModifyRule (porting guide): replace one argument of a call with new source text.

`func_name` matches like FuncNameModifyRule's `old_name` (dotted: resolved through imports;
bare: any call or method call of that name, a heuristic). `arg_idx` is the 0-based position among
positional arguments; the optional extension `arg_name` also matches that keyword argument.
An absent argument is not added. A `*args` before the position makes it unknowable: reported.

Code: `ArgRewrite.rewrite_call`, a call hook (engine/interface/hooks.py) keyed by the dotted name or,
for a bare `func_name`, by the call's short name.
"""

from __future__ import annotations

import ast
from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from ms_fmk_transplt.engine.interface import Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="ArgsModifyRule",
    schema={
        "required": ["func_name", "arg_idx", "arg_new"],
        "properties": {
            "func_name": {"type": "string"},
            "arg_idx": {"type": "integer", "minimum": 0},
            "arg_new": {"type": "string", "format": "python-expression"},
            "arg_name": {"type": "string"},
        },
    },
    message="argument {old} -> {new}",
)
class ArgsModifyRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        problems = []
        if p := checks.dotted_name(entry["func_name"]):
            problems.append(("func_name", p))
        if p := checks.expression(entry["arg_new"]):
            problems.append(("arg_new", p))
        if "arg_name" in entry and (p := checks.identifier(entry["arg_name"])):
            problems.append(("arg_name", p))
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"argument {entry['arg_idx']} of {entry['func_name']} becomes {entry['arg_new']}"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return (entry["func_name"], entry["arg_idx"], entry.get("arg_name"))

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            rewrite = ArgRewrite(rule, p["arg_idx"], p.get("arg_name"), p["arg_new"])
            tables.add_call_hook(p["func_name"], rewrite, by_short_name="." not in p["func_name"])
            tables.add_name_trigger(p["func_name"])


@dataclass(frozen=True)
class ArgRewrite:
    """Replace one argument of a call: positional `index` and/or keyword `keyword`."""

    rule: Rule
    index: int | None
    keyword: str | None
    new_code: str
    order: ClassVar[int] = 0  # before keyword defaults and renames

    def rewrite_call(self, site: Site, original: cst.Call, updated: cst.Call, name: str | None) -> cst.Call:
        """The call with the argument replaced; a position hidden behind `*args` is reported."""
        slot = self.find_arg(original)
        if slot == -2:
            where = f"argument {self.index} of {self.rule.params.get('func_name')}"
            site.report_message(
                original,
                self.rule,
                Operation.UNSUPPORTED,
                f"{where} is hidden behind *args; set it to {self.new_code} by hand",
            )
            return updated.with_changes(args=list(updated.args))
        args = list(updated.args)
        if slot >= 0 and not _same_value(_code(args[slot].value), self.new_code):
            args[slot] = args[slot].with_changes(value=cst.parse_expression(self.new_code))
            site.report(
                original.args[slot],
                self.rule,
                Operation.MODIFY,
                heuristic="." not in str(self.rule.params.get("func_name", ".")),
                old=_code(original.args[slot].value),
                new=self.new_code,
            )
        return updated.with_changes(args=args)

    def find_arg(self, call: cst.Call) -> int:
        """Index into call.args of the argument this rewrite targets; -1 absent, -2 not locatable."""
        for i, arg in enumerate(call.args):  # a keyword is found wherever it stands, after *args too
            if arg.keyword is not None and self.keyword is not None and arg.keyword.value == self.keyword:
                return i
        position = 0
        for i, arg in enumerate(call.args):
            if arg.keyword is not None:
                continue
            if arg.star:
                if self.index is not None and position <= self.index:
                    return -2
                continue
            if self.index is not None and position == self.index:
                return i
            position += 1
        return -1


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _same_value(code: str, other: str) -> bool:
    """Equal source, or equal literals spelled differently ('hccl' and "hccl")."""
    if code == other:
        return True
    try:
        return ast.literal_eval(code) == ast.literal_eval(other)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
