"""What Ascend can't run, as the CI gate sees it: issues, baselines and the fail-on levels.

An issue is a finding with a support status: an API the release lists as unsupported or
partial, a partial one used with a dtype the list leaves out, one no list or NPU kernel vouches
for (not verified), CUDA-only code, or a CUDA knob kept that does nothing on the NPU (no effect).
Findings that rewrite code are changes, not issues. Every report lists the same issues
(`issues`). Suppressed issues (inline comments) and issues recorded in a baseline stay in every
report, marked, and never fail the gate; no-effect issues never fail it either (the line runs).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ms_fmk_transplt import __version__
from ms_fmk_transplt.records import Finding, Operation, RunResult, Support

#: --fail-on levels; each fails on its own status and on every status listed before it.
FAIL_ON = ("unsupported", "partial", "not-verified", "none")
# the --fail-on level at which each status starts to fail; a dtype outside a partial API's list
# fails where partial does (it was a partial finding before the code's dtypes were read)
_ORDER = {Support.UNSUPPORTED: 0, Support.DTYPE: 1, Support.PARTIAL: 1, Support.NOT_VERIFIED: 2}
BASELINE_VERSION = 1
_CHANGES = frozenset({Operation.INSERT, Operation.MODIFY, Operation.DELETE})


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names the file."""


@dataclass(frozen=True)
class Issue:
    """One finding the gate judges, with where it is and how it is excused."""

    path: str
    finding: Finding
    status: Support
    baselined: bool = False

    @property
    def excused(self) -> bool:
        return self.finding.suppressed or self.baselined

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What a baseline matches on: file, rule, API (or message) and the line's fingerprint."""
        f = self.finding
        return (self.path, f.rule_id, f.api or f.message, f.fingerprint)


def issues(run: RunResult) -> list[Issue]:
    """Every issue in the run, in file and line order."""
    found = []
    for result in run.files:
        for finding in result.findings:
            status = status_of(finding)
            if status is not None:
                found.append(Issue(result.path, finding, status))
    return found


def is_change(finding: Finding) -> bool:
    """True for a finding that rewrote code (INSERT, MODIFY, DELETE)."""
    return finding.operation in _CHANGES


def notes(run: RunResult) -> list[tuple[str, Finding]]:
    """(path, finding) for every finding that is neither a change, an issue nor advice: what a
    conversion left to the user (the distributed mode's DS1xx), in file and line order. With
    `is_change`, `status_of` and `advice` this sorts every finding into exactly one section of
    every report."""
    return [
        (result.path, finding)
        for result in run.files
        for finding in result.findings
        if not is_change(finding) and status_of(finding) is None and finding.operation is not Operation.ADVICE
    ]


def advice(run: RunResult) -> list[tuple[str, Finding]]:
    """(path, finding) for every piece of performance advice (`--advice`), in file and line order."""
    return [
        (result.path, finding)
        for result in run.files
        for finding in result.findings
        if finding.operation is Operation.ADVICE
    ]


def status_of(finding: Finding) -> Support | None:
    """The issue status of a finding, None for a change (the one definition every report uses)."""
    status = finding.support
    if status is None and finding.operation is Operation.UNSUPPORTED:
        status = Support.NO_EFFECT if finding.noop else Support.UNSUPPORTED
    return None if status is Support.SUPPORTED else status


def fails(issue: Issue, fail_on: str) -> bool:
    """True when `issue` is unexcused and at or above the `fail_on` level."""
    if fail_on == "none" or issue.excused or issue.status not in _ORDER:
        return False
    return _ORDER[issue.status] <= FAIL_ON.index(fail_on)


def baseline_document(found: Iterable[Issue]) -> bytes:
    """A baseline of `found` (suppressed ones left out: their comment already excuses them)."""
    counts = Counter(issue.key for issue in found if not issue.finding.suppressed)
    entries = [
        {"file": path, "rule": rule, "api": api, "fingerprint": fingerprint, "count": count}
        for (path, rule, api, fingerprint), count in sorted(counts.items())
    ]
    document = {
        "tool": "ms_fmk_transplt",
        "version": __version__,
        "format": BASELINE_VERSION,
        "issues": entries,
    }
    return (json.dumps(document, indent=1) + "\n").encode()


_TEXT = {"type": "string"}
BASELINE_SCHEMA = {
    "type": "object",
    "properties": {
        "tool": _TEXT,
        "version": _TEXT,
        "format": {"type": "integer"},
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["file", "rule", "api", "fingerprint"],
                "properties": {
                    "file": _TEXT,
                    "rule": _TEXT,
                    "api": _TEXT,
                    "fingerprint": _TEXT,
                    "count": {"type": "integer", "minimum": 1},
                },
            },
        },
    },
}


def load_baseline(path: Path, warnings: list[str] | None = None) -> Counter[tuple[str, str, str, str]]:
    """The issue keys a baseline file holds, with their counts; BaselineError names the file and
    the JSON location, in JSON's words, as a rule file's errors do (an editor's BOM is allowed).
    Keys a baseline does not have are reported in `warnings`."""
    from ms_fmk_transplt.ruleset.schema import (
        decode,
        duplicate_key,
        error_location,
        error_message,
        spell,
        unknown_keys,
        validation_errors,
    )

    try:
        text = path.read_text(encoding="utf-8-sig")  # an editor's BOM is not part of the JSON
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    try:
        document = decode(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}:{exc.lineno}:{exc.colno}: not a JSON baseline: {exc.msg}") from None
    except ValueError as exc:  # NaN, Infinity
        raise BaselineError(f"{path}: not a JSON baseline: {exc}") from None
    if twice := duplicate_key(document):
        raise BaselineError(f"{path}: {twice}")
    given = document.get("format") if isinstance(document, dict) else document
    if not isinstance(document, dict) or type(given) is not int or given != BASELINE_VERSION:
        found = "no /format" if isinstance(document, dict) and "format" not in document else spell(given)
        raise BaselineError(
            f"{path}: not an ms_fmk_transplt baseline (format {BASELINE_VERSION}; found {found})"
        )
    errors = validation_errors(BASELINE_SCHEMA, document)
    if errors:
        raise BaselineError(f"{path}: {error_location(errors[0])}: {error_message(errors[0], [])}")
    if warnings is not None:
        warnings.extend(f"{path}: {warning}" for warning in unknown_keys(document, BASELINE_SCHEMA))
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for entry in document.get("issues", []):
        counts[(entry["file"], entry["rule"], entry["api"], entry["fingerprint"])] += entry.get("count", 1)
    return counts


def apply_baseline(found: list[Issue], baseline: Counter[tuple[str, str, str, str]]) -> list[Issue]:
    """`found` with the issues the baseline covers marked; each baseline entry covers `count` issues."""
    left = Counter(baseline)
    marked = []
    for issue in found:
        if not issue.finding.suppressed and left[issue.key] > 0:
            left[issue.key] -= 1
            issue = Issue(issue.path, issue.finding, issue.status, baselined=True)
        marked.append(issue)
    return marked
