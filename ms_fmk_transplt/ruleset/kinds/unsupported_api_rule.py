"""UnsupportedApiRule: report every use of a module or API that cannot run on the NPU.

Matches the qualified name and everything under it (imports included); nothing is rewritten.
`noop: true` marks knobs that are harmless on the NPU (cuDNN flags): reported, kept, and not
counted by --strict.

Code: name table `Tables.renames` (report only); applied by engine/transformer.py (`Tables.lookup`).
"""

from collections.abc import Hashable

from ms_fmk_transplt.engine.rule import Rule
from ms_fmk_transplt.engine.tables import Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="UnsupportedApiRule",
    schema={"required": ["name"], "properties": {"name": {"type": "string"}, "noop": {"type": "boolean"}}},
    message="{old} has no NPU counterpart",
)
class UnsupportedApiRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return [("name", p)] if (p := checks.dotted_name(entry["name"])) else []

    @staticmethod
    def summary(entry: Entry) -> str:
        what = "has no effect on the NPU (kept)" if entry.get("noop") else "cannot run on the NPU (reported)"
        return f"{entry['name']} {what}"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["name"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            tables.renames[rule.params["name"]] = tables.rename(rule, None, rule.params.get("suggestion", ""))
            tables.add_name_trigger(rule.params["name"])
