"""KeywordRenameRule: rename a keyword argument of one function, `profile(use_cuda=...)` -> `use_npu=`.

`func_name` is a dotted name resolved through the file's imports, as in FuncNameModifyRule.

Code: `KeywordRename.rewrite_call`, a call hook (engine/interface/hooks.py) keyed by `func_name`.
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
    name="KeywordRenameRule",
    schema={
        "required": ["func_name", "keyword", "new_keyword"],
        "properties": {
            "func_name": {"type": "string"},
            "keyword": {"type": "string"},
            "new_keyword": {"type": "string"},
        },
    },
    message="{old}= -> {new}=",
)
class KeywordRenameRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return checks.problems(
            entry, func_name=checks.dotted_name, keyword=checks.identifier, new_keyword=checks.identifier
        )

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"{entry['func_name']}({entry['keyword']}=...) -> {entry['new_keyword']}=..."

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return (entry["func_name"], entry["keyword"])

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            tables.add_call_hook(p["func_name"], KeywordRename(rule, p["keyword"], p["new_keyword"]))
            tables.add_name_trigger(p["func_name"])


@dataclass(frozen=True)
class KeywordRename:
    """Rename keyword argument `keyword` of a call to `new_keyword`."""

    rule: Rule
    keyword: str
    new_keyword: str
    order: ClassVar[int] = 2  # after keyword defaults, which look for the keyword as written

    def rewrite_call(self, site: Site, original: cst.Call, updated: cst.Call, name: str | None) -> cst.Call:
        """The call with the keyword renamed wherever it is passed."""
        args = list(updated.args)
        for i, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == self.keyword:
                site.report(
                    original.args[i], self.rule, Operation.MODIFY, old=self.keyword, new=self.new_keyword
                )
                args[i] = arg.with_changes(keyword=arg.keyword.with_changes(value=self.new_keyword))
        return updated.with_changes(args=args)
