"""StringLiteralRule: rewrite string literals that name a device or backend, `"cuda:0"` -> `"npu:0"`.

A heuristic: a literal (or f-string, with `{...}` standing for each expression) whose whole value
matches `pattern` has its leading `old` replaced by `new`, wherever it is code rather than the
user's words. Never changed: docstrings and bare string statements, arguments of print / logging /
warnings / exceptions, `help=`-like keywords, option names given to add_argument, attribute names
given to getattr, dict keys and subscripts (except inside `map_location=`). Partial matches
("cuda is slow", "--cuda", "use_cuda") never match.

With `device_context` (the device rule has one) a bare `"cuda"` is changed only where it is
provably a device (engine/context.py): an argument of a device-taking call or keyword listed in
`calls` / `keywords`, a comparison with a device-named expression (`names`), a value bound to a
device-named variable, parameter, dict key or `--device` option, or a variable the file passes to
a device-taking call. `"cuda:N"` forms and `"cuda:" + str(rank)` are always devices. Judgement
calls: `__all__` entries, `dest=`, path pieces (`os.path.join`) are names, kept silently; any
other bare `"cuda"` is kept and reported, since renaming a user's key or label breaks programs
that ran before while a missed device shows up at once on the NPU. Code nested in a message's
arguments (`print(torch.zeros(2, device="cuda"))`) is still converted.

With `in_keys` the rule applies to dict keys and subscripts too: for values that can only
mean one thing, such as the legacy tensor-type names `"torch.cuda.HalfTensor"` that
`t.type()` returns and code looks up in tables.
"""

import re

from ms_fmk_transplt.engine.tables import StringRewrite
from ms_fmk_transplt.rules import checks
from ms_fmk_transplt.rules.registry import kind


@kind(
    name="StringLiteralRule",
    schema={
        "required": ["pattern", "old", "new"],
        "properties": {
            "pattern": {"type": "string"},
            "old": {"type": "string"},
            "new": {"type": "string"},
            "in_keys": {"type": "boolean"},
            "device_context": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "calls": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    },
                    "keywords": {"type": "array", "items": {"type": "string"}},
                    "names": {"type": "array", "items": {"type": "string"}},
                    "option_keywords": {"type": "array", "items": {"type": "string"}},
                    "text_calls": {"type": "array", "items": {"type": "string"}},
                    "text_keywords": {"type": "array", "items": {"type": "string"}},
                    "text_targets": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
    message="{old} -> {new}",
    heuristic=True,
)
class StringLiteralRule:
    @staticmethod
    def check(entry):
        if p := checks.regex(entry["pattern"]):
            return [("pattern", p)]
        regex = re.compile(entry["pattern"])
        starts = entry["pattern"].startswith(re.escape(entry["old"]))
        if not entry["old"] or not (
            starts or regex.fullmatch(entry["old"] + _sample_suffix(regex, entry["old"]))
        ):
            return [("old", f"the pattern must match strings that start with {entry['old']!r}")]
        for i, name in enumerate(entry.get("device_context", {}).get("names", ())):
            if p := checks.regex(name):
                return [(f"device_context.names[{i}]", p)]
        if any(ch in entry["new"] for ch in "'\"\\\n"):
            return [("new", "quotes, backslashes and newlines are not allowed in the replacement")]
        return []

    @staticmethod
    def summary(entry):
        return f"string literals matching {entry['pattern']!r}: {entry['old']!r} -> {entry['new']!r} (where code, not prose)"

    @staticmethod
    def key(entry):
        return entry["pattern"]

    @staticmethod
    def compile(rules, tables):
        for rule in rules:
            p = rule.params
            tables.strings.append(StringRewrite(rule, re.compile(p["pattern"]), p["old"], p["new"]))
            tables.keyed_strings = tables.keyed_strings or bool(p.get("in_keys"))
            tables.add_trigger(p["old"])
            tables.device_spec.add(p.get("device_context", {}))


def _sample_suffix(regex, old):
    """'' when the bare prefix matches, else ':0' so that patterns like cuda(:\\d+)? validate."""
    return "" if regex.fullmatch(old) else ":0"
