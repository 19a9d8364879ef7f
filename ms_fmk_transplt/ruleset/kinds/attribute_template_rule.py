"""AttributeTemplateRule: rewrite an attribute read by its name alone into an expression written
from a template, `x.is_cuda` -> a test of `x.device` (`--target accelerator`).

A heuristic, as AttributeRenameRule: the receiver's type is not known statically. `{receiver}` in
the template is the object read from, `{attribute}` the attribute's name. With `module`, only that
module's attribute is rewritten, resolved through imports (`torch.cuda.FloatTensor`, not
`torch.FloatTensor`), and `attribute` may list several names. Kept where the file assigns an
attribute of that name on the same object (its own attribute); reported where it assigns one on
another object.

`uncalled`: only where the attribute is read as a value, not called (`dev_mod = torch.cuda`,
`torch.cuda.Event` handed on): calls have their own rules. With `uncalled` and `module`,
`attribute` may be `"*"`: any other attribute of the module or of a module under it, and a
`template` of null reports the use with `suggestion` instead of rewriting it (never a silent
miss).

Code: `AttributeTemplate.rewrite_attribute`, an attribute hook (engine/interface/hooks.py) keyed by the
attribute's name (`uncalled`: in the REFERENCES slot of `Tables.hooks`, asked only for an attribute not called).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.interface import ATTRIBUTES, REFERENCES, Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="AttributeTemplateRule",
    schema={
        "required": ["attribute", "template"],
        "properties": {
            "attribute": {"type": ["string", "array"], "items": {"type": "string"}},
            "template": {"type": ["string", "null"]},
            "module": {"type": "string"},
            "uncalled": {"type": "boolean"},
            "suggestion": {"type": "string"},
        },
    },
    message="{old} -> {new}",
    heuristic=True,
)
class AttributeTemplateRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        wildcard = entry.get("uncalled") and "module" in entry
        for name in _names(entry):
            if (name != "*" or not wildcard) and (p := checks.identifier(name)):
                return [("attribute", p)]
        if "module" in entry and (p := checks.dotted_name(entry["module"])):
            return [("module", p)]
        if entry["template"] is None:
            return [] if wildcard else [("template", "null only with uncalled and module (a report)")]
        try:
            filled = entry["template"].format(receiver="x", attribute="a")
        except (KeyError, IndexError, ValueError) as exc:
            return [
                (
                    "template",
                    f"unknown field or stray brace in the template ({exc}); fields: receiver, attribute",
                )
            ]
        return [("template", p)] if (p := checks.expression(filled)) else []

    @staticmethod
    def summary(entry: Entry) -> str:
        where = entry.get("module", "x")
        return f"attribute {where}.{'/'.join(_names(entry))} -> {entry['template'] or 'reported'}"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return tuple(_names(entry))

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            module = p.get("module", "")
            slot = REFERENCES if p.get("uncalled") else ATTRIBUTES
            for name in _names(p):
                hook = AttributeTemplate(rule, p["template"] or "", module, p.get("suggestion", ""))
                tables.hooks.put(slot, name, hook)
                tables.add_name_trigger(module if name == "*" else f"{module}.{name}" if module else name)


def _names(entry: Entry) -> list[str]:
    names = entry["attribute"]
    return [names] if isinstance(names, str) else list(names)


@dataclass(frozen=True)
class AttributeTemplate:
    """`x.attribute` -> the template's expression of `x`, unless the file assigns that attribute itself."""

    rule: Rule
    template: str
    module: str = ""  # only this module's attribute (qualified), not any object's
    suggestion: str = ""  # no template: the use is reported with this

    @property
    def new(self) -> str | None:
        """The expression as the template spells it (None: report-only)."""
        return self.template or None

    def rewrite_attribute(
        self, site: Site, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression | None:
        """The expression; the attribute kept where it is the file's own (reported when only
        another object's is)."""
        attr = original.attr.value
        owner = site.qualify(original.value)
        if self.module and owner != self.module:
            if not self.template and owner is not None and owner.startswith(self.module + "."):
                pass  # a wildcard's report covers the modules under its own (torch.cuda.amp.X)
            else:
                return None
        if not self.template:
            site.report_message(
                original,
                self.rule,
                Operation.UNSUPPORTED,
                f"{owner}.{attr} used as a value kept: no device-agnostic form; {self.suggestion}",
                api=f"{owner}.{attr}",
            )
            return updated
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
        new_code = self.template.format(receiver=receiver, attribute=attr)
        old = f"{self.module}.{attr}" if self.module else attr
        site.report(original, self.rule, Operation.MODIFY, heuristic=not self.module, old=old, new=new_code)
        return cst.parse_expression(new_code)
