"""AttributeRenameRule: rename an attribute read by name alone, `x.is_cuda` -> `x.is_npu`.

A heuristic like MethodRenameRule; attributes of imported modules are left to the name rules.

Code: `AttributeRename.rewrite_attribute`, an attribute hook (engine/interface/hooks.py) keyed by the attribute's
name; which attributes the file assigns itself is read by engine/naming/ownership.py.
"""

from collections.abc import Hashable
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.interface import ATTRIBUTES, Rule, Site, Tables
from ms_fmk_transplt.records import Operation
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
            hook = AttributeRename(rule, rule.params["new_attribute"])
            tables.hooks.put(ATTRIBUTES, rule.params["attribute"], hook)
            tables.add_name_trigger(rule.params["attribute"])


@dataclass(frozen=True)
class AttributeRename:
    """`x.attribute` -> `x.new` by name, unless the file assigns an attribute of that name itself."""

    rule: Rule
    new: str | None

    def rewrite_attribute(
        self, site: Site, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression | None:
        """The attribute renamed; kept where this object's attribute is the file's own (reported
        when only another object's is)."""
        if self.new is None:
            return updated
        attr = original.attr.value
        if site.names.assigns(original.value, attr):
            return updated
        if site.names.assigns_anywhere(attr):
            message = f".{attr} kept: this file also assigns its own .{attr}; if this one is a tensor's, write .{self.new}"
            site.report_kept(original, self.rule, message)
            return updated
        site.report(original, self.rule, Operation.MODIFY, heuristic=True, old=attr, new=self.new)
        return updated.with_changes(attr=updated.attr.with_changes(value=self.new))
