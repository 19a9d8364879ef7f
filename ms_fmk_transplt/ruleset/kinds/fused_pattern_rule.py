"""FusedPatternRule: a computation written out over several statements (a hand-written RMSNorm
`forward`, a SwiGLU product) replaced by the torch_npu fused operator that computes it (`--opt-in`).

Applied only when the run opts into the rule's `opt_in` (`--opt-in affinity`); otherwise the rule
adds nothing (`--advice` names the same replacement, with its condition). The rule's `pattern`
names a matcher of ruleset/fusions/, which replaces a computation only where the fused operator
provably computes the same (the rule's `tolerance` says how close the result stays).

Code: `FusedPattern.plan`, a pattern hook (engine/interface/hooks.py) run once per module before the
transformer; engine/conversion/fused_patterns.py applies the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.interface import ANY, FUSED, Planned, Rule, Site, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.fusions.attention import attention
from ms_fmk_transplt.ruleset.fusions.inline import Qualify, Replacement
from ms_fmk_transplt.ruleset.fusions.rms_norm import rms_norm
from ms_fmk_transplt.ruleset.fusions.rotary import rotary
from ms_fmk_transplt.ruleset.fusions.swiglu import swiglu
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind

PATTERNS: dict[str, Callable[[cst.Module, Qualify, str], Iterator[Replacement]]] = {
    "rms_norm": rms_norm,
    "swiglu": swiglu,
    "rotary": rotary,
    "attention": attention,
}


@kind(
    name="FusedPatternRule",
    schema={
        "required": ["pattern", "new_name", "opt_in", "tolerance", "words"],
        "properties": {
            "pattern": {"type": "string"},
            "new_name": {"type": "string"},
            "tolerance": {"type": "string"},
            "words": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "half_precision": {"type": "boolean"},
        },
    },
    message="{found} -> {new} ({tolerance})",
)
class FusedPatternRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return checks.problems(
            entry,
            new_name=checks.dotted_name,
            pattern=checks.one_of(PATTERNS, "pattern"),
            opt_in=checks.non_empty("an opt_in name"),
        )

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"hand-written {entry['pattern']} -> {entry['new_name']} (opt-in: {entry['opt_in']})"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["pattern"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            if p["opt_in"] not in tables.opt_ins:
                continue  # not asked for: --advice says where it would apply
            half = bool(p.get("half_precision"))
            tables.hooks.add(
                FUSED, ANY, FusedPattern(rule, p["pattern"], p["new_name"], p["tolerance"], half)
            )
            # a file that spells none of the words computes no such pattern (the fast path's test)
            tables.add_trigger(*p["words"])


@dataclass(frozen=True)
class FusedPattern:
    """Plan the replacements of one pattern in a module."""

    rule: Rule
    pattern: str  # a name of PATTERNS (a name pickles with the tables, as a function may not)
    new_name: str
    tolerance: str
    half_precision: bool = False  # only in a file computing in float16/bfloat16 (FusedCallRule's)

    def plan(self, site: Site, module: cst.Module) -> list[Planned]:
        """Every match of the pattern in `module`, with the fused call that replaces it."""
        if not site.imports_torch or (self.half_precision and not site.half_precision):
            return []
        return [
            Planned(node, build, self.rule, {**fields, "tolerance": self.tolerance})
            for node, build, fields in PATTERNS[self.pattern](module, site.qualify, self.new_name)
        ]
