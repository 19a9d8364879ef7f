"""ArgValueRule: report a call whose argument is one of some string values that only mean CUDA.

`lightning.Trainer(accelerator="gpu")` asks Lightning for its CUDA accelerator: nothing can be
rewritten, since Lightning has no NPU accelerator name to write instead, so the call is reported
with what to do. The call is matched by qualified name; the argument by `keyword`, or by its
0-based position `arg_idx` among positional arguments when given; only a string literal equal to
one of `values` is reported, or a variable or attribute the module binds (or defaults, or gives
as an option's default) to one of them (`accelerator = "gpu"; Trainer(accelerator=accelerator)`, `tf32 = True`,
`add_argument("--accelerator", default="gpu")`, `Trainer(accelerator=args.accelerator)`); any
other value is left alone. A boolean among `values` matches the literal `True` / `False`
(`TrainingArguments(tf32=True)`, which raises on any device but a CUDA GPU). Instead of `values`,
`pattern` (a regular expression searched in the string) matches values that spell a CUDA device
among other words (rwkv's `RWKV(model, strategy="cuda fp16 *10 -> cpu fp32")`, whose strategy
grammar has no NPU device). With `method` true, `func_name` is a short name matched whatever it is
called on (a heuristic: `LlamaForCausalLM.from_pretrained(..., load_in_8bit=True)` on any model
class).

Code: `ArgValueReport.rewrite_call` (reports only), a call hook (engine/interface/hooks.py) keyed by `func_name`.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from ms_fmk_transplt.engine.devices import code_of
from ms_fmk_transplt.engine.interface import Rule, Site, Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="ArgValueRule",
    schema={
        "required": ["func_name", "keyword", "suggestion"],
        "properties": {
            "func_name": {"type": "string"},
            "keyword": {"type": "string"},
            "arg_idx": {"type": "integer", "minimum": 0},
            "values": {"type": "array", "items": {"type": ["string", "boolean"]}, "minItems": 1},
            "pattern": {"type": "string"},
            "method": {"type": "boolean"},
            "suggestion": {"type": "string"},
        },
    },
    message="{old} has no NPU counterpart",
)
class ArgValueRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        name_check = checks.identifier if entry.get("method") else checks.dotted_name
        problems = checks.problems(
            entry, func_name=name_check, keyword=checks.identifier, pattern=checks.regex
        )
        if "values" not in entry and "pattern" not in entry:
            problems.append(("values", "give the values to report, or a pattern they match"))
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        values = ", ".join(repr(v) for v in entry.get("values", ()))
        if "pattern" in entry:
            values = (values + ", " if values else "") + f"a string matching {entry['pattern']!r}"
        return f"report {entry['func_name']}({entry['keyword']}={values})"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return (entry["func_name"], entry["keyword"])

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            pattern = re.compile(p["pattern"]) if "pattern" in p else None
            hook = ArgValueReport(
                rule, p["keyword"], p.get("arg_idx"), frozenset(p.get("values", ())), pattern
            )
            tables.add_call_hook(p["func_name"], hook, by_short_name=bool(p.get("method")))
            tables.add_name_trigger(p["func_name"])


@dataclass(frozen=True)
class ArgValueReport:
    """Report `keyword=<one of values>` (or the same value at position `arg_idx`) in a call."""

    rule: Rule
    keyword: str
    arg_idx: int | None
    values: frozenset[str | bool]
    pattern: re.Pattern[str] | None = None
    order: ClassVar[int] = 0  # reads the call as written

    def matches(self, value: str | bool) -> bool:
        """`value` is one of `values`, or a string `pattern` finds."""
        if value in self.values:
            return True
        return isinstance(value, str) and self.pattern is not None and self.pattern.search(value) is not None

    def rewrite_call(self, site: Site, original: cst.Call, updated: cst.Call, name: str | None) -> cst.Call:
        """The call unchanged; an UNSUPPORTED finding at the argument when its value is listed."""
        positional = [a for a in original.args if a.keyword is None and not a.star]
        chosen = next(
            (a for a in original.args if a.keyword is not None and a.keyword.value == self.keyword), None
        )
        if (
            chosen is None
            and self.arg_idx is not None
            and self.arg_idx < len(positional)
            and not any(a.star for a in original.args[: original.args.index(positional[self.arg_idx])])
        ):
            chosen = positional[self.arg_idx]
        if chosen is None:
            return updated
        if isinstance(chosen.value, cst.Name) and chosen.value.value in ("True", "False"):
            flag = chosen.value.value == "True"
            if any(v is flag for v in self.values):
                what = f"{self.keyword}={flag}"
                site.report_unsupported(
                    chosen.value, self.rule, what, self.rule.params["suggestion"], api=name or ""
                )
            return updated
        if isinstance(
            chosen.value, (cst.Name, cst.Attribute)
        ):  # accelerator = "gpu"; Trainer(accelerator=accelerator)
            flow = site.roles.context.flow
            held: list[str | bool] = [
                v.evaluated_value for v in flow.held(chosen.value) if isinstance(v.evaluated_value, str)
            ]
            held += sorted(flow.held_flags(chosen.value))
            found = next((v for v in held if self.matches(v)), None)
            if found is not None:
                what = f"{self.keyword}={code_of(chosen.value)} (which can hold {found!r})"
                site.report_unsupported(
                    chosen.value, self.rule, what, self.rule.params["suggestion"], api=name or ""
                )
            return updated
        if not isinstance(chosen.value, cst.SimpleString):
            return updated
        value = chosen.value.evaluated_value
        if not isinstance(value, str) or not self.matches(value):
            return updated
        what = f"{self.keyword}={value!r}"
        site.report_unsupported(chosen.value, self.rule, what, self.rule.params["suggestion"], api=name or "")
        return updated
