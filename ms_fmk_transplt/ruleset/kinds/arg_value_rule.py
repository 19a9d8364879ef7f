"""ArgValueRule: report a call whose argument is one of some string values that only mean CUDA.

`lightning.Trainer(accelerator="gpu")` asks Lightning for its CUDA accelerator: nothing can be
rewritten, since Lightning has no NPU accelerator name to write instead, so the call is reported
with what to do. The call is matched by qualified name; the argument by `keyword`, or by its
0-based position `arg_idx` among positional arguments when given; only a string literal equal to
one of `values` is reported, or a variable or attribute the module binds (or defaults, or gives
as an option's default) to one of them (`accelerator = "gpu"; Trainer(accelerator=accelerator)`,
`add_argument("--accelerator", default="gpu")`, `Trainer(accelerator=args.accelerator)`); any
other value is left alone. A boolean among `values` matches the literal `True` / `False`
(`TrainingArguments(tf32=True)`, which raises on any device but a CUDA GPU).

Code: `ArgValueReport.rewrite_call` (reports only), a call hook (engine/hooks.py) keyed by `func_name`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from ms_fmk_transplt.engine.context import code_of
from ms_fmk_transplt.engine.hooks import Site
from ms_fmk_transplt.engine.rule import Rule
from ms_fmk_transplt.engine.tables import Tables
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="ArgValueRule",
    schema={
        "required": ["func_name", "keyword", "values", "suggestion"],
        "properties": {
            "func_name": {"type": "string"},
            "keyword": {"type": "string"},
            "arg_idx": {"type": "integer", "minimum": 0},
            "values": {"type": "array", "items": {"type": ["string", "boolean"]}, "minItems": 1},
            "suggestion": {"type": "string"},
        },
    },
    message="{old} has no NPU counterpart",
)
class ArgValueRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return checks.problems(entry, func_name=checks.dotted_name, keyword=checks.identifier)

    @staticmethod
    def summary(entry: Entry) -> str:
        values = ", ".join(repr(v) for v in entry["values"])
        return f"report {entry['func_name']}({entry['keyword']}={values})"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return (entry["func_name"], entry["keyword"])

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            hook = ArgValueReport(rule, p["keyword"], p.get("arg_idx"), frozenset(p["values"]))
            tables.add_call_hook(p["func_name"], hook)
            tables.add_name_trigger(p["func_name"])


@dataclass(frozen=True)
class ArgValueReport:
    """Report `keyword=<one of values>` (or the same value at position `arg_idx`) in a call."""

    rule: Rule
    keyword: str
    arg_idx: int | None
    values: frozenset[str | bool]
    order: ClassVar[int] = 0  # reads the call as written

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
            held = site.roles.context.flow.held(chosen.value)
            found = next((v.evaluated_value for v in held if v.evaluated_value in self.values), None)
            if found is not None:
                what = f"{self.keyword}={code_of(chosen.value)} (which can hold {found!r})"
                site.report_unsupported(
                    chosen.value, self.rule, what, self.rule.params["suggestion"], api=name or ""
                )
            return updated
        if not isinstance(chosen.value, cst.SimpleString):
            return updated
        value = chosen.value.evaluated_value
        if not isinstance(value, str) or value not in self.values:
            return updated
        what = f"{self.keyword}={value!r}"
        site.report_unsupported(chosen.value, self.rule, what, self.rule.params["suggestion"], api=name or "")
        return updated
