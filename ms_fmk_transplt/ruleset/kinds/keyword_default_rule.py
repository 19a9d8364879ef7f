"""KeywordDefaultRule: pass a keyword argument whose default means CUDA, when the call omits it.

`torch.random.fork_rng(devices=[0])` forks the CUDA generators unless told otherwise; the rule
adds `device_type="npu"`. A call that passes the keyword (or `**kwargs`) is left alone.

Code: `KeywordDefault.rewrite_call`, a call hook (engine/interface/hooks.py) keyed by `func_name`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from ms_fmk_transplt.engine.interface import Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="KeywordDefaultRule",
    schema={
        "required": ["func_name", "keyword", "value"],
        "properties": {
            "func_name": {"type": "string"},
            "keyword": {"type": "string"},
            "value": {"type": "string", "format": "python-expression"},
        },
    },
    message="{old}(...) -> {new}",
)
class KeywordDefaultRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return checks.problems(
            entry, func_name=checks.dotted_name, keyword=checks.identifier, value=checks.expression
        )

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"{entry['func_name']}(...) gets {entry['keyword']}={entry['value']} when it is not passed"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return (entry["func_name"], entry["keyword"])

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            tables.add_call_hook(p["func_name"], KeywordDefault(rule, p["keyword"], p["value"]))
            tables.add_name_trigger(p["func_name"])


@dataclass(frozen=True)
class KeywordDefault:
    """Append `keyword=value` to a call that passes neither that keyword nor `**kwargs`."""

    rule: Rule
    keyword: str
    value: str  # source text
    order: ClassVar[int] = 1  # after argument rewrites, before keyword renames

    def rewrite_call(self, site: Site, original: cst.Call, updated: cst.Call, name: str | None) -> cst.Call:
        """The call with the keyword appended, unless it is passed already."""
        if any(
            a.star == "**" or (a.keyword is not None and a.keyword.value == self.keyword)
            for a in updated.args
        ):
            return updated
        new_arg = cst.Arg(
            keyword=cst.Name(self.keyword),
            value=cst.parse_expression(self.value),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
            ),
        )
        args = list(updated.args)
        if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        site.report(original, self.rule, Operation.MODIFY, old=name, new=f"{self.keyword}={self.value}")
        return updated.with_changes(args=[*args, new_arg])
