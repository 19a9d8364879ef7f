"""ModuleMemberRule: move the members of one module to another, member by member.

`torch.cuda.X` becomes `torch.npu.X` for each X in `members` (or in the shipped release data
named by `members_from`); any other member is left as it is and reported as UNSUPPORTED with
the rule's `suggestion` (or left alone, with `"others": "keep"`). A reference to the module
itself is renamed unless others are kept: to `module_itself` when given, else to `new_module`
(`torch.cuda.memory.empty_cache` -> `torch.npu.empty_cache`, which torch.npu re-exports, while
`torch.cuda.memory` itself -> `torch_npu.npu.memory`, the module object).

Code: `ModuleMembers.resolve` (with `rewrite_reference`), a name hook (engine/interface/hooks.py's
`NameHook`) keyed by the old module, and a `MemberRename` (a `Rename` of
module_name_modify_rule.py) per listed member; the engine resolves names through the imports, asks
the hook of the longest covered prefix, and renames import statements by the same hooks.
"""

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

from ms_fmk_transplt.engine.interface import QUALIFIED, Match, Rule, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.kinds.module_name_modify_rule import QualifiedRewrite, Rename
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind
from ms_fmk_transplt.ruleset.schema import spell
from ms_fmk_transplt.suggest import closest


@kind(
    name="ModuleMemberRule",
    schema={
        "required": ["module", "new_module"],
        "properties": {
            "module": {"type": "string"},
            "new_module": {"type": "string"},
            "members": {"type": "array", "items": {"type": "string"}},
            "members_from": {"type": "string"},
            "others": {"enum": ["unsupported", "keep"]},
            "module_itself": {"type": "string"},
        },
    },
    message="{old} -> {new}",
)
class ModuleMemberRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        problems: list[Problem] = [
            (k, p)
            for k in ("module", "new_module", "module_itself")
            if k in entry and (p := checks.dotted_name(entry[k]))
        ]
        for i, member in enumerate(entry.get("members", [])):
            if p := checks.identifier(member):
                problems.append((f"members/{i}", p))
        if "members" not in entry and "members_from" not in entry:
            problems.append(("members", "give the members to move, or members_from"))
        if "members_from" in entry:
            from ms_fmk_transplt import data

            if entry["members_from"] not in data.MEMBER_LISTS:
                problems.append(
                    (
                        "members_from",
                        f"unknown member list {spell(entry['members_from'])}; "
                        f"valid: {', '.join(sorted(data.MEMBER_LISTS))}",
                    )
                )
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"{entry['module']}.X -> {entry['new_module']}.X for every X the NPU offers"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["module"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        from ms_fmk_transplt import data

        for rule in rules:
            p = rule.params
            members = list(p.get("members", []))
            if "members_from" in p:
                members += data.members(p["members_from"], tables.release)
            suggestion = rule.params.get("suggestion", "")
            if p.get("others", "unsupported") == "unsupported":
                torch, known = data.torch_members(p["module"])
                hook = ModuleMembers(rule, p["new_module"], suggestion, p.get("module_itself"), known, torch)
                tables.hooks.remove(QUALIFIED, p["module"], lambda old: isinstance(old, ModuleMembers))
                tables.hooks.add(QUALIFIED, p["module"], hook)
            for member in members:
                MemberRename(rule, f"{p['new_module']}.{member}").add_if_absent(
                    tables, f"{p['module']}.{member}"
                )
            tables.add_name_trigger(p["module"])


@dataclass(frozen=True)
class MemberRename(Rename):
    """One listed member of the module, renamed into the new module (unless a rule renames it)."""


@dataclass(frozen=True)
class ModuleMembers(QualifiedRewrite):
    """A module whose listed members are renamed one by one (their `Rename`s); any other member is
    reported, and the module itself becomes `itself` (default `new_module`)."""

    rule: Rule
    new_module: str
    suggestion: str = ""
    itself: str | None = None
    # the old module's own names in the pinned torch, and its version: a member outside them is
    # a misspelling or another torch's API, said so (with the nearest name), not "the NPU lacks it"
    known: frozenset[str] = frozenset()
    torch: str = ""
    members: ClassVar[bool] = True
    rewrites: ClassVar[bool] = True

    def resolve(self, name: str, prefix: str, rest: list[str]) -> Match | None:
        if not rest:
            return Match(self.rule, name, prefix, self.itself or self.new_module, hook=self)
        missing = self.missing(prefix, rest[0])
        return Match(self.rule, name, f"{prefix}.{rest[0]}", None, missing or self.suggestion, self)

    def missing(self, module: str, member: str) -> str | None:
        """The suggestion for a member the old module does not have, or None when it has it."""
        if not self.known or member in self.known:
            return None
        near = closest(member, (n for n in self.known if not n.startswith("_")), cutoff=0.8)
        hint = f": did you mean {module}.{near}?" if near else ""
        return f"{module} of torch {self.torch} has no {member}{hint}"
