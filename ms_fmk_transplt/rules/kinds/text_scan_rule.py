"""TextScanRule: report lines of launch scripts and configs that still speak CUDA.

Non-Python files are copied byte-identical; this kind only reports. A line of a file whose
name matches one of `files` (glob patterns such as `*.sh`, `*.yaml`) and whose text matches
`pattern` (a regular expression, searched) becomes an UNSUPPORTED finding with the rule's
`suggestion`, e.g. `export CUDA_VISIBLE_DEVICES=0,1` in run.sh or `backend: nccl` in a config.
"""

import re

from ms_fmk_transplt.rules import checks
from ms_fmk_transplt.rules.registry import kind


@kind(
    name="TextScanRule",
    schema={
        "required": ["pattern", "files"],
        "properties": {
            "pattern": {"type": "string"},
            "files": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
    },
    message="{old}",
)
class TextScanRule:
    @staticmethod
    def check(entry):
        return [("pattern", p)] if (p := checks.regex(entry["pattern"])) else []

    @staticmethod
    def summary(entry):
        return f"report lines matching {entry['pattern']!r} in {', '.join(entry['files'])} files"

    @staticmethod
    def key(entry):
        return entry["pattern"]

    @staticmethod
    def compile(rules, tables):
        for rule in rules:
            tables.text_scans.append((rule, re.compile(rule.params["pattern"]), tuple(rule.params["files"])))
