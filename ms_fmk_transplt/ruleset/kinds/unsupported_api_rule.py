"""UnsupportedApiRule: report every use of a module or API that cannot run on the NPU.

Matches the qualified name and everything under it (imports included); nothing is rewritten.
A name holding `*` is a glob on a top-level module's name (`*_cuda`: the compiled CUDA
extensions a project imports by their own names, `import scaled_masked_softmax_cuda`), matched
only where no other rule covers the name. `noop: true` marks knobs that are harmless on the NPU
(cuDNN flags): reported, kept, and not counted by --strict.

Code: name tables `Tables.renames`, `Tables.module_globs` (report only); applied by engine/conversion/transformer.py (`Tables.lookup`).
"""

from collections.abc import Hashable

from ms_fmk_transplt.engine.interface import Rule, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind
from ms_fmk_transplt.ruleset.schema import spell


@kind(
    name="UnsupportedApiRule",
    schema={"required": ["name"], "properties": {"name": {"type": "string"}, "noop": {"type": "boolean"}}},
    message="{old} has no NPU counterpart",
)
class UnsupportedApiRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        name = entry["name"]
        if "*" in name:
            if "." in name or checks.identifier(name.replace("*", "x")) or not name.strip("*"):
                return [("name", f"{spell(name)} is not a glob on a module's name (letters, digits, _, *)")]
            return []
        return [("name", p)] if (p := checks.dotted_name(name)) else []

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
            entry = tables.rename(rule, None, rule.params.get("suggestion", ""))
            if "*" in rule.params["name"]:
                tables.add_module_glob(rule.params["name"], entry)
                continue
            tables.renames[rule.params["name"]] = entry
            tables.add_name_trigger(rule.params["name"])
