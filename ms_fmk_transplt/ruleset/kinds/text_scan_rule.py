"""TextScanRule: report lines of launch scripts and configs that still speak CUDA.

Non-Python files are copied byte-identical; this kind only reports. A line of a file whose
name matches one of `files` (glob patterns such as `*.sh`, `*.yaml`) and whose text matches
`pattern` (a regular expression, searched) becomes an UNSUPPORTED finding with the rule's
`suggestion`, e.g. `export CUDA_VISIBLE_DEVICES=0,1` in run.sh or `backend: nccl` in a config.
The scans of `*.sh` files also read the shell text of Python modules: a job script a launcher
writes, a command it runs (engine/conversion/embedded_scripts.py).

Code: `TextScan.applies_to` / `scan_line`, a text hook (engine/interface/hooks.py) that engine/conversion/convert.py
(`scan_text`) runs over the lines of each copied file.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass
from fnmatch import fnmatch
from typing import Any

from ms_fmk_transplt.engine.interface import ANY, TEXT, Rule, Tables
from ms_fmk_transplt.records import Finding, Operation, Support
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


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
    def check(entry: Entry) -> list[Problem]:
        return [("pattern", p)] if (p := checks.regex(entry["pattern"])) else []

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"report lines matching {entry['pattern']!r} in {', '.join(entry['files'])} files"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["pattern"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            pattern = rule.params["pattern"]
            tables.hooks.add(
                TEXT,
                ANY,
                TextScan(
                    rule, re.compile(pattern), tuple(rule.params["files"]), re.compile(pattern, re.MULTILINE)
                ),
            )


@dataclass(frozen=True)
class TextScan:
    """Lines matching `regex` in files whose names match one of the `files` globs."""

    rule: Rule
    regex: Any  # compiled regex
    files: tuple[str, ...]
    lines_regex: Any  # the same, compiled to find a line anywhere in a text (re.MULTILINE)

    def matches_anywhere(self, text: str) -> bool:
        """Does some line of `text` match (a cheap test before the scan of each line)?"""
        return self.lines_regex.search(text) is not None

    def applies_to(self, file_name: str) -> bool:
        """Does one of the globs match the file's name?"""
        return any(fnmatch(file_name, glob) for glob in self.files)

    def scan_line(self, number: int, line: str) -> Finding | None:
        """An UNSUPPORTED finding quoting the line (cut to 120 characters), with the suggestion."""
        if not self.regex.search(line):
            return None
        suggestion = self.rule.params.get("suggestion", "")
        message = f"{line.strip()[:120]}: {suggestion}" if suggestion else line.strip()[:120]
        return Finding(
            self.rule.id,
            Operation.UNSUPPORTED,
            number,
            number,
            message,
            support=Support.UNSUPPORTED,
            suggestion=suggestion,
        )
