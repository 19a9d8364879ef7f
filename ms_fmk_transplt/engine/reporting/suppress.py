"""What the source says about its findings: inline suppressions and line fingerprints.

`# ms_fmk_transplt: ignore` on a finding's lines (or alone on the line above) suppresses every finding
there; `# ms_fmk_transplt: ignore[TP901, TP902]` only those rules. A suppressed finding stays in
the reports, marked, and never fails the gate. The fingerprint is a hash of the finding's first
line with whitespace folded: a baseline keyed by it survives edits that only move the line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

from ms_fmk_transplt.records import Finding

IGNORE = re.compile(r"#\s*ms_fmk_transplt:\s*ignore\b(?:\[([^\]]*)\])?")


def annotate(findings: tuple[Finding, ...], data: bytes) -> tuple[Finding, ...]:
    """`findings` with `suppressed` and `fingerprint` filled from the original source."""
    if not findings:
        return findings
    lines = data.decode("utf-8", errors="replace").splitlines()
    ignores = {
        number: _rules(match) for number, line in enumerate(lines, 1) if (match := IGNORE.search(line))
    }
    # the line above counts only when it holds the comment alone, not another statement's trailer
    alone = {number for number in ignores if lines[number - 1].lstrip().startswith("#")}
    annotated = []
    for finding in findings:
        text = lines[finding.start_line - 1] if 0 < finding.start_line <= len(lines) else ""
        fingerprint = hashlib.sha1(" ".join(text.split()).encode()).hexdigest()[:16]
        covering = range(finding.start_line, max(finding.start_line, finding.end_line) + 1)
        above = finding.start_line - 1
        suppressed = any(_covers(ignores, number, finding.rule_id) for number in covering) or (
            above in alone and _covers(ignores, above, finding.rule_id)
        )
        annotated.append(dataclasses.replace(finding, suppressed=suppressed, fingerprint=fingerprint))
    return tuple(annotated)


def _covers(ignores: dict[int, frozenset[str] | None], line: int, rule_id: str) -> bool:
    if line not in ignores:
        return False
    rules = ignores[line]
    return rules is None or rule_id in rules


def _rules(match: re.Match[str]) -> frozenset[str] | None:
    """The rule ids an ignore comment names; None for a bare ignore (every rule)."""
    if match.group(1) is None:
        return None
    return frozenset(part.strip() for part in match.group(1).split(",") if part.strip())
