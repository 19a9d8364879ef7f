"""AttributeRenameRule: rename an attribute read by name alone, `x.is_cuda` -> `x.is_npu`.

A heuristic like MethodRenameRule; attributes of imported modules are left to the name rules.

Code: name table `Tables.attributes`; applied by engine/renames.py `NameRenames.rename_attribute`.
"""

from collections.abc import Hashable

from ms_fmk_transplt.engine.rule import Rule
from ms_fmk_transplt.engine.tables import Rename, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="AttributeRenameRule",
    schema={
        "required": ["attribute", "new_attribute"],
        "properties": {"attribute": {"type": "string"}, "new_attribute": {"type": "string"}},
    },
    message=".{old} -> .{new}",
    heuristic=True,
)
class AttributeRenameRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return [(k, p) for k in ("attribute", "new_attribute") if (p := checks.identifier(entry[k]))]

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"attribute .{entry['attribute']} -> .{entry['new_attribute']} (by name)"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["attribute"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            tables.attributes[rule.params["attribute"]] = Rename(rule, rule.params["new_attribute"])
            tables.add_trigger(rule.params["attribute"])
