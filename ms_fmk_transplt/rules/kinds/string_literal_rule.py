"""StringLiteralRule: rewrite string literals that name a device or backend, `"cuda:0"` -> `"npu:0"`.

A heuristic: a literal (or f-string, with `{...}` standing for each expression) whose whole value
matches `pattern` has its leading `old` replaced by `new`, wherever it is code rather than the
user's words. Never changed: docstrings and bare string statements, arguments of print / logging /
warnings / exceptions, `help=`-like keywords, option names given to add_argument, attribute names
given to getattr, dict keys and subscripts (except inside `map_location=`). Partial matches
("cuda is slow", "--cuda", "use_cuda") never match.
"""

import re

from ms_fmk_transplt.engine.tables import StringRewrite
from ms_fmk_transplt.rules import checks
from ms_fmk_transplt.rules.registry import kind


@kind(
    name="StringLiteralRule",
    schema={
        "required": ["pattern", "old", "new"],
        "properties": {"pattern": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
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
        if not entry["old"] or not regex.fullmatch(entry["old"] + _sample_suffix(regex, entry["old"])):
            return [("old", f"the pattern must match strings that start with {entry['old']!r}")]
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
            tables.add_trigger(p["old"])


def _sample_suffix(regex, old):
    """'' when the bare prefix matches, else ':0' so that patterns like cuda(:\\d+)? validate."""
    return "" if regex.fullmatch(old) else ":0"
