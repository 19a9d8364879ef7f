"""UnsupportedApiRule: report every use of a module or API that cannot run on the NPU.

Matches the qualified name and everything under it (imports included); nothing is rewritten.
A name holding `*` is a glob on a top-level module's name (`*_cuda`: the compiled CUDA
extensions a project imports by their own names, `import scaled_masked_softmax_cuda`), matched
only where no other rule covers the name. `noop: true` marks knobs that are harmless on the NPU
(cuDNN flags): reported, kept, and not counted by --strict.

Code: `UnsupportedName.resolve`, a report-only `Rename` (module_name_modify_rule.py), a name hook
(engine/interface/hooks.py's `NameHook`) keyed by the name; for a glob `ModuleGlob`, a name hook under "*"
(any top-level module no other hook covers).
"""

import fnmatch
import re
from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

from ms_fmk_transplt.engine.interface import ANY, QUALIFIED, Match, Rule, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.kinds.module_name_modify_rule import QualifiedRewrite, Rename
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
            name = rule.params["name"]
            entry = UnsupportedName(rule, *tables.opt_in(rule, None, rule.params.get("suggestion", "")))
            if "*" in name:
                glob = ModuleGlob(rule, name, re.compile(fnmatch.translate(name)), entry.suggestion)
                tables.hooks.remove(QUALIFIED, ANY, glob.replaces)
                tables.hooks.add(QUALIFIED, ANY, glob)
                tables.add_trigger(name.replace("*", ""))  # a file using one spells the rest of the glob
                continue
            entry.put(tables, name)
            tables.add_name_trigger(name)


@dataclass(frozen=True)
class UnsupportedName(Rename):
    """A name that cannot run on the NPU, and everything under it: reported, never replaced."""


@dataclass(frozen=True)
class ModuleGlob(QualifiedRewrite):
    """Every use of a top-level module whose name matches `glob` (`*_cuda`), reported."""

    rule: Rule
    glob: str
    pattern: re.Pattern[str]
    suggestion: str = ""
    members: ClassVar[bool] = False
    rewrites: ClassVar[bool] = False

    def replaces(self, hook: object) -> bool:
        """`hook` is an earlier rule's on the same glob."""
        return isinstance(hook, ModuleGlob) and hook.glob == self.glob

    def resolve(self, name: str, prefix: str, rest: list[str]) -> Match | None:
        if not self.pattern.fullmatch(prefix):
            return None
        return Match(self.rule, name, prefix, None, self.suggestion, self)
