"""AttributeTemplateRule: rewrite an attribute read by its name alone into an expression written
from a template, `x.is_cuda` -> a test of `x.device` (`--target accelerator`).

A heuristic, as AttributeRenameRule: the receiver's type is not known statically. `{receiver}` in
the template is the object read from. Kept where the file assigns an attribute of that name on the
same object (its own attribute); reported where it assigns one on another object.

Code: `AttributeTemplate.rewrite_attribute`, an attribute hook (engine/hooks.py) keyed by the
attribute's name.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.hooks import Site
from ms_fmk_transplt.engine.rule import Rule
from ms_fmk_transplt.engine.tables import Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="AttributeTemplateRule",
    schema={
        "required": ["attribute", "template"],
        "properties": {"attribute": {"type": "string"}, "template": {"type": "string"}},
    },
    message=".{old} -> {new}",
    heuristic=True,
)
class AttributeTemplateRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        if p := checks.identifier(entry["attribute"]):
            return [("attribute", p)]
        try:
            filled = entry["template"].format(receiver="x")
        except (KeyError, IndexError, ValueError) as exc:
            return [("template", f"unknown field or stray brace in the template ({exc}); fields: receiver")]
        return [("template", p)] if (p := checks.expression(filled)) else []

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"attribute x.{entry['attribute']} -> {entry['template']} (by name)"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["attribute"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            tables.attribute_hooks[rule.params["attribute"]] = AttributeTemplate(
                rule, rule.params["template"]
            )
            tables.add_name_trigger(rule.params["attribute"])


@dataclass(frozen=True)
class AttributeTemplate:
    """`x.attribute` -> the template's expression of `x`, unless the file assigns that attribute itself."""

    rule: Rule
    template: str

    @property
    def new(self) -> str:
        """The expression as the template spells it."""
        return self.template

    def rewrite_attribute(
        self, site: Site, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression | None:
        """The expression; the attribute kept where it is the file's own (reported when only
        another object's is)."""
        attr = original.attr.value
        if site.names.assigns(original.value, attr):
            return updated
        if site.names.assigns_anywhere(attr):
            site.report_kept(original, self.rule, f".{attr} kept: this file also assigns its own .{attr}")
            return updated
        if "torch." in self.template and site.qualify(cst.Name("torch")) != "torch":
            site.report_kept(
                original,
                self.rule,
                f".{attr} kept: its portable form calls torch, not imported as torch here",
            )
            return updated
        receiver = cst.Module(body=[]).code_for_node(updated.value)
        new_code = self.template.format(receiver=receiver)
        site.report(original, self.rule, Operation.MODIFY, heuristic=True, old=attr, new=new_code)
        return cst.parse_expression(new_code)
