"""ModuleMemberRule: move the members of one module to another, member by member.

`torch.cuda.X` becomes `torch.npu.X` for each X in `members` (or in the shipped release data
named by `members_from`); any other member is left as it is and reported as UNSUPPORTED with
the rule's `suggestion` (or left alone, with `"others": "keep"`). A reference to the module
itself is renamed unless others are kept: to `module_itself` when given, else to `new_module`
(`torch.cuda.memory.empty_cache` -> `torch.npu.empty_cache`, which torch.npu re-exports, while
`torch.cuda.memory` itself -> `torch_npu.npu.memory`, the module object).

Code: name tables `Tables.modules`, `Tables.renames`; applied by engine/conversion/transformer.py (`Tables.lookup`).
"""

from collections.abc import Hashable

from ms_fmk_transplt.engine.interface import ModuleMembers, Rename, Rule, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind
from ms_fmk_transplt.ruleset.schema import spell


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
                tables.modules[p["module"]] = ModuleMembers(
                    rule, p["new_module"], suggestion, p.get("module_itself"), known, torch
                )
            for member in members:
                tables.renames.setdefault(
                    f"{p['module']}.{member}", Rename(rule, f"{p['new_module']}.{member}")
                )
            tables.add_name_trigger(p["module"])
