"""ModuleNameModifyRule (porting guide): rename a module, `parent_module.old_name` -> `parent_module.new_name`.

Matches the module and everything under it wherever the file's imports lead to it:
`import parent.old`, `import parent.old as m`, `from parent import old`, `from parent.old import x`,
and attribute chains `parent.old.x`. An empty or missing `parent_module` means a top-level module.

Code: `Rename.resolve` (with `rewrite_reference`), a name hook (engine/interface/hooks.py's `NameHook`)
keyed by the old module's qualified name: it says what a name under it becomes, and rewrites a
reference through the `Site`'s `replace_name`; the engine resolves names through the imports and
renames import statements by the same hooks. FuncNameModifyRule, ModuleMemberRule and
UnsupportedApiRule define their renames as subclasses of `Rename`.
"""

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from ms_fmk_transplt.engine.interface import QUALIFIED, Match, Rule, Site, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


def _full(entry: Entry, key: str) -> str:
    parent = entry.get("parent_module") or ""
    return f"{parent}.{entry[key]}" if parent else entry[key]


@kind(
    name="ModuleNameModifyRule",
    schema={
        "required": ["old_name", "new_name"],
        "properties": {
            "old_name": {"type": "string"},
            "new_name": {"type": "string"},
            "parent_module": {"type": "string"},
        },
    },
    message="{old} -> {new}",
)
class ModuleNameModifyRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        problems = [(k, p) for k in ("old_name", "new_name") if (p := checks.dotted_name(entry[k]))]
        parent = entry.get("parent_module")
        if parent and (p := checks.dotted_name(parent)):
            problems.append(("parent_module", p))
        if not problems and entry["old_name"] == entry["new_name"]:
            problems.append(("new_name", "new_name is the same as old_name"))
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"rename module {_full(entry, 'old_name')} to {_full(entry, 'new_name')}"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return _full(entry, "old_name")

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            old = _full(rule.params, "old_name")
            Rename(rule, _full(rule.params, "new_name")).put(tables, old)
            tables.add_name_trigger(old)


class QualifiedRewrite:
    """The rewrite of an attribute chain a name hook resolved: reported, and written as the
    match's target (the engine keeps the chain's root where the import binds it)."""

    def rewrite_reference(
        self, site: Site, original: cst.Attribute, updated: cst.Attribute, match: Match
    ) -> cst.BaseExpression:
        site.report_match(original, match)
        return site.replace_name(original, updated, match.target)


@dataclass(frozen=True)
class Rename(QualifiedRewrite):
    """A qualified name and everything under it, and what it becomes; `new=None` reports it."""

    rule: Rule
    new: str | None
    suggestion: str = ""
    members: ClassVar[bool] = False

    @property
    def rewrites(self) -> bool:
        return self.new is not None

    def resolve(self, name: str, prefix: str, rest: list[str]) -> Match | None:
        return Match(self.rule, name, prefix, self.new, self.suggestion, self)

    def put(self, tables: Tables, name: str) -> None:
        """The rename of `name`, replacing an earlier rule's rename of it (not a module's members)."""
        tables.hooks.remove(QUALIFIED, name, lambda hook: isinstance(hook, Rename))
        tables.hooks.add(QUALIFIED, name, self)

    def add_if_absent(self, tables: Tables, name: str) -> None:
        """The rename of `name`, unless a rule renames it already."""
        if not any(isinstance(hook, Rename) for hook in tables.hooks.at(QUALIFIED, name) or ()):
            tables.hooks.add(QUALIFIED, name, self)
