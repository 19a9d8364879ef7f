"""StringLiteralRule: rewrite string literals that name a device or backend, `"cuda:0"` -> `"npu:0"`.

A heuristic: a literal (or f-string, with `{...}` standing for each expression) whose whole value
matches `pattern` has its leading `old` (with `everywhere`, every `old` in it) replaced by `new`, wherever it is code rather than the
user's words. Never changed: docstrings and bare string statements, arguments of print / logging /
warnings / exceptions, `help=`-like keywords, option names given to add_argument, attribute names
given to getattr, dict keys and subscripts (a `map_location` dict's keys, which name where a
checkpoint was saved, are MapLocationRule's). Partial matches ("cuda is slow", "--cuda",
"use_cuda") never match.

With `device_context` (the device rule has one) a bare `"cuda"` is changed only where it is
provably a device (engine/devices/device_evidence.py): an argument of a device-taking call or keyword listed in
`calls` / `keywords`, a comparison with a device-named expression (`names`), a value bound to a
device-named variable, parameter, dict key or `--device` option, or a variable, attribute or
option field the file passes to a device-taking call (`add_argument("--accel", default="cuda")`
with `model.to(opt.accel)`). `"cuda:N"` forms and `"cuda:" + str(rank)` are always devices. Judgement
calls: `__all__` entries, `dest=`, path pieces (`os.path.join`) are names, kept silently; any
other bare `"cuda"` is kept and reported, since renaming a user's key or label breaks programs
that ran before while a missed device shows up at once on the NPU. Code nested in a message's
arguments (`print(torch.zeros(2, device="cuda"))`) is still converted.

With `in_keys` the rule applies to dict keys and subscripts too: for values that can only
mean one thing, such as the legacy tensor-type names `"torch.cuda.HalfTensor"` that
`t.type()` returns and code looks up in tables.

Code: `StringRewrite.rewrite_string` / `rewrite_fstring`, a string hook (engine/interface/hooks.py);
the engine decides where a literal is prose (engine/literals/roles.py) and whether it is a device
(engine/devices/device_evidence.py).
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from ms_fmk_transplt.engine.devices import (
    ACCELERATOR,
    CONVENTION,
    NAME_LISTS,
    PATTERN_LISTS,
    REPORTED_TEXT,
    DeviceAnswer,
)
from ms_fmk_transplt.engine.interface import ANY, STRINGS, Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind
from ms_fmk_transplt.ruleset.schema import spell


@kind(
    name="StringLiteralRule",
    schema={
        "required": ["pattern", "old", "new"],
        "properties": {
            "pattern": {"type": "string"},
            "old": {"type": "string"},
            "new": {"type": "string"},
            "in_keys": {"type": "boolean"},
            # --target accelerator: a device literal becomes an expression, not another literal
            "device_form": {"type": "string", "format": "python-expression"},
            "test_form": {"type": "string", "format": "python-expression"},
            "everywhere": {"type": "boolean"},
            "device_context": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "calls": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    },
                    "calls_from": {"enum": ["torch"]},
                    "predicates": {"type": "object", "additionalProperties": {"type": "string"}},
                    "call_keywords": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "string"}},
                    },
                    **{
                        key: {"type": "array", "items": {"type": "string"}}
                        for key in (*NAME_LISTS, *PATTERN_LISTS)
                    },
                },
            },
        },
    },
    message="{old} -> {new}",
    heuristic=True,
)
class StringLiteralRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        if p := checks.regex(entry["pattern"]):
            return [("pattern", p)]
        regex = re.compile(entry["pattern"])
        starts = entry["pattern"].startswith(re.escape(entry["old"]))
        if entry.get("everywhere"):
            if not entry["old"] or re.escape(entry["old"]) not in entry["pattern"]:
                return [("old", f"with everywhere, the pattern must spell out {spell(entry['old'])}")]
        elif not entry["old"] or not (
            starts or regex.fullmatch(entry["old"] + _sample_suffix(regex, entry["old"]))
        ):
            return [("old", f"the pattern must match strings that start with {spell(entry['old'])}")]
        for field in PATTERN_LISTS:
            for i, name in enumerate(entry.get("device_context", {}).get(field, ())):
                if p := checks.regex(name):
                    return [(f"device_context/{field}/{i}", p)]
        for key in ("device_form", "test_form"):
            if key in entry and (p := checks.expression(entry[key])):
                return [(key, p)]
        if any(ch in entry["new"] for ch in "'\"\\\n"):
            return [("new", "quotes, backslashes and newlines are not allowed in the replacement")]
        return []

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"string literals matching {entry['pattern']!r}: {entry['old']!r} -> {entry['new']!r} (where code, not prose)"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["pattern"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            p = rule.params
            rewrite = StringRewrite(
                rule,
                re.compile(p["pattern"]),
                p["old"],
                p["new"],
                bool(p.get("in_keys")),
                bool(p.get("everywhere")),
                p.get("device_form", ""),
                p.get("test_form", ""),
            )
            tables.hooks.add(STRINGS, ANY, rewrite)
            tables.add_trigger(p["old"])
            if "predicates" in p.get("device_context", {}):
                tables.dispatch_words.add(
                    p["new"]
                )  # an NPU alternative keeps the others (engine/devices/dispatch_sites.py)
            tables.device_spec.add(p.get("device_context", {}))


_TESTS = ("compared with ", "tested against ")  # engine/devices/device_evidence.py's evidence of a comparison


def _sample_suffix(regex: re.Pattern[str], old: str) -> str:
    """'' when the bare prefix matches, else ':0' so that patterns like cuda(:\\d+)? validate."""
    return "" if regex.fullmatch(old) else ":0"


@dataclass(frozen=True)
class StringRewrite:
    """A string literal whose whole value matches `pattern` gets its leading `old` replaced by `new`."""

    rule: Rule
    pattern: Any  # compiled regex
    old: str
    new: str
    in_keys: bool = False
    everywhere: bool = False  # every `old` in the value is replaced, not only a leading one
    device_form: str = ""  # an expression a device literal's `old` becomes (its rest kept, in an f-string)
    test_form: str = ""  # the same where the literal is compared with a device (`x.device.type == "cuda"`)

    def hint(self) -> str:
        """What to write instead, as messages say it."""
        return self.device_form or repr(self.new)

    def rewrite_string(
        self, site: Site, original: cst.SimpleString, updated: cst.SimpleString, value: str
    ) -> cst.BaseExpression | None:
        """None when `value` does not match; else the literal, rewritten where it is a device."""
        if not site.roles.context.matches(original, value, self.pattern, self.old):
            return self._spelled(site, original, updated, value)
        contextual = "device_context" in self.rule.params
        in_argument = site.roles.in_device_arg(original)
        verdict, why = (
            (DeviceAnswer.DEVICE, "")
            if in_argument or not contextual
            else site.roles.device(original, value, self.old)
        )
        if verdict is not DeviceAnswer.DEVICE:
            if verdict is DeviceAnswer.UNKNOWN and self._twin_kept(site, original, value):
                return updated  # `case "cuda" | "hip":` beside `case "npu":`: not "write 'npu'"
            if verdict is DeviceAnswer.UNKNOWN or why.startswith(REPORTED_TEXT):
                self.report_kept(site, original, value, why, unknown=verdict is DeviceAnswer.UNKNOWN)
            return updated
        if self._twin_kept(site, original, value):
            return updated
        if self.device_form:
            return self._as_expression(site, original, updated, value, why)
        new_value = (
            value.replace(self.old, self.new) if self.everywhere else self.new + value[len(self.old) :]
        )
        site.report(
            original,
            self.rule,
            Operation.MODIFY,
            heuristic=(not in_argument and not contextual) or why.endswith(CONVENTION),
            # a replacement inside a longer string names the part it replaces
            old=repr(self.old if self.everywhere else value),
            new=repr(self.new if self.everywhere else new_value),
        )
        quote = original.quote
        return updated.with_changes(value=f"{original.prefix}{quote}{new_value}{quote}")

    def _twin_kept(self, site: Site, original: cst.SimpleString, value: str) -> bool:
        """Keep a literal whose dispatch already has the value it would become in another branch
        (`{"cuda": "nccl", "npu": "hccl"}`, `if d == "cuda": ... elif d == "npu": ...`), with a note."""
        rival = site.roles.rival(original, self.converted)
        if rival is None:
            return False
        site.report_message(
            original,
            self.rule,
            Operation.CHECK,
            f"{value!r} kept: the code already has an NPU alternative ({rival.evaluated_value!r}, line"
            " {line}) beside this CUDA one",
            related=rival,
        )
        return True

    def converted(self, value: str) -> bool:
        """Is `value` what this rule writes (`"npu"`, `"npu:0"`, the prefix `"npu:"`)?"""
        if self.everywhere:
            return self.new in value and bool(self.pattern.fullmatch(value.replace(self.new, self.old)))
        if not value.startswith(self.new):
            return False
        rest = value[len(self.new) :]
        return bool(self.pattern.fullmatch(self.old + rest)) or rest == ":"

    def _spelled(
        self, site: Site, original: cst.SimpleString, updated: cst.SimpleString, value: str
    ) -> cst.BaseExpression | None:
        """The first piece of a value spelled in pieces that match only together ('cu' 'da'): reported."""
        whole = site.roles.spelled.get(id(original))
        if (
            whole is None
            or "device_context" not in self.rule.params
            or not self.pattern.fullmatch(whole)
            or not site.imports_torch
        ):
            return None
        site.report_message(
            original,
            self.rule,
            Operation.UNSUPPORTED,
            f"{whole!r} spelled in pieces ({value!r} first) kept: the converter rewrites whole literals"
            f" only; if it names a device, write {self.hint()}",
            heuristic=True,
        )
        return updated

    def report_kept(
        self,
        site: Site,
        original: cst.SimpleString | cst.FormattedString,
        value: str,
        why: str,
        unknown: bool = False,
    ) -> bool:
        """Report a device-looking literal kept in a torch file (any kept one `unknown` to the context)."""
        contextual = "device_context" in self.rule.params
        looks = bool(self.pattern.fullmatch(value))
        if not contextual or not looks or not (unknown or site.imports_torch):
            return False
        site.report_message(
            original,
            self.rule,
            Operation.UNSUPPORTED,
            (
                f"{value!r} kept: not provably a device here ({why}); if it names one, write {self.hint()}"
                if unknown
                else f"{value!r} kept ({why}): Lightning has no {self.new!r} accelerator; subclass its"
                " Accelerator for the NPU and pass an instance as accelerator="
                if why.startswith(ACCELERATOR)
                else f"{value!r} kept as the user's text ({why}); if it names a device, write {self.hint()}"
            ),
            heuristic=True,
        )
        return True

    def _as_expression(
        self, site: Site, original: cst.SimpleString, updated: cst.SimpleString, value: str, why: str
    ) -> cst.BaseExpression:
        """A device literal as the target's expression: `"cuda"` -> the form, `"cuda:0"` -> an
        f-string led by it; a comparison's literal takes `test_form`, which is never a CPU's type."""
        tested = why.startswith(_TESTS) and self.test_form
        form = self.test_form if tested else self.device_form
        if value == self.old:
            new_code = form
        elif "b" in original.prefix.lower():
            site.report_message(
                original,
                self.rule,
                Operation.UNSUPPORTED,
                f"{value!r} kept: a bytes literal; write {self.hint()}",
            )
            return updated
        else:
            rest = value[len(self.old) :].replace("{", "{{").replace("}", "}}")
            quote = original.quote
            inner = form.replace('"', "'") if '"' in quote else form.replace("'", '"')
            raw = "r" if "r" in original.prefix.lower() else ""
            new_code = f"{raw}f{quote}{{{inner}}}{rest}{quote}"
        site.report(
            original,
            self.rule,
            Operation.MODIFY,
            heuristic=why.endswith(CONVENTION),
            old=repr(value),
            new=new_code,
        )
        return cst.parse_expression(new_code)

    def rewrite_fstring(
        self, site: Site, original: cst.FormattedString, updated: cst.FormattedString, template: str
    ) -> cst.BaseExpression | None:
        """None when the f-string's `template` does not match; else it, its leading text rewritten."""
        first = updated.parts[0]
        if not (
            self.pattern.fullmatch(template)
            and isinstance(first, cst.FormattedStringText)
            and first.value.startswith(self.old)
        ):
            return None
        site.report(
            original,
            self.rule,
            Operation.MODIFY,
            heuristic=not site.roles.in_device_arg(original),
            old=repr(template),
            new=f"f-string led by {{{self.device_form}}}"
            if self.device_form
            else repr(self.new + template[len(self.old) :]),
        )
        if self.device_form:
            inner = self.device_form
            inner = inner.replace('"', "'") if '"' in updated.end else inner.replace("'", '"')
            lead: list[cst.BaseFormattedStringContent] = [
                cst.FormattedStringExpression(expression=cst.parse_expression(inner))
            ]
            if first.value[len(self.old) :]:
                lead.append(first.with_changes(value=first.value[len(self.old) :]))
            return updated.with_changes(parts=[*lead, *updated.parts[1:]])
        new_first = first.with_changes(value=self.new + first.value[len(self.old) :])
        return updated.with_changes(parts=[new_first, *updated.parts[1:]])
