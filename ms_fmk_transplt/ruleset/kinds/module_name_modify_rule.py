"""ModuleNameModifyRule (porting guide): rename a module, `parent_module.old_name` -> `parent_module.new_name`.

Matches the module and everything under it wherever the file's imports lead to it:
`import parent.old`, `import parent.old as m`, `from parent import old`, `from parent.old import x`,
and attribute chains `parent.old.x`. An empty or missing `parent_module` means a top-level module.

Code: name table `Tables.renames`; applied by engine/conversion/transformer.py (`Tables.lookup`).
"""

from collections.abc import Hashable

from ms_fmk_transplt.engine.interface import Rename, Rule, Tables
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
            tables.renames[old] = Rename(rule, _full(rule.params, "new_name"))
            tables.add_name_trigger(old)
