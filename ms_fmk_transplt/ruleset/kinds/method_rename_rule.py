"""MethodRenameRule: rename a method call by name alone, `x.cuda(...)` -> `x.npu(...)`.

A heuristic: the receiver's type is not known statically. It never touches a method whose
receiver resolves to an imported module, nor an attribute that is not called (`args.cuda`).

Code: name table `Tables.methods`; applied by engine/renames.py `NameRenames.rename_call`.
"""

from collections.abc import Hashable

from ms_fmk_transplt.engine.rule import Rule
from ms_fmk_transplt.engine.tables import Rename, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="MethodRenameRule",
    schema={
        "required": ["method", "new_method"],
        "properties": {"method": {"type": "string"}, "new_method": {"type": "string"}},
    },
    message=".{old}(...) -> .{new}(...)",
    heuristic=True,
)
class MethodRenameRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return [(k, p) for k in ("method", "new_method") if (p := checks.identifier(entry[k]))]

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"method call .{entry['method']}(...) -> .{entry['new_method']}(...) (by name)"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["method"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            tables.methods[rule.params["method"]] = Rename(rule, rule.params["new_method"])
            tables.add_trigger(rule.params["method"])
