"""The analysis reports: issues as JSON, CSV and SARIF 2.1.0 (for GitHub code scanning).

Every format lists the same issues (analysis.issues) at their original lines and columns. With
--advice, the JSON report adds the advice (its own list) and SARIF adds it as `note` results.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ms_fmk_transplt import __version__
from ms_fmk_transplt.analysis import Issue, advice
from ms_fmk_transplt.records import AdviceFact, Finding, RunResult, Support
from ms_fmk_transplt.reports.csv_cells import csv_text

FIELDS = [
    "file",
    "line",
    "column",
    "end_line",
    "rule",
    "api",
    "status",
    "supported_dtypes",
    "suggestion",
    "source",
    "message",
    "heuristic",
    "suppressed",
    "baselined",
]
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# what will not run is an error, what runs but not as meant a warning, what to check a note
SARIF_LEVELS = ("error", "warning", "note")  # highest first: --sarif-level keeps it and those above
_LEVEL = {
    Support.UNSUPPORTED: "error",
    Support.DTYPE: "warning",
    Support.NO_EFFECT: "warning",
    Support.PARTIAL: "note",
    Support.NOT_VERIFIED: "note",
}


def _row(issue: Issue) -> dict[str, Any]:
    f = issue.finding
    return {
        "file": issue.path,
        "line": f.start_line,
        "column": f.column or 1,
        "end_line": f.end_line,
        "rule": f.rule_id,
        "api": f.api,
        "status": issue.status.value,
        "supported_dtypes": f.dtypes,
        "suggestion": f.suggestion,
        "source": f.source or f"rule {f.rule_id}",
        "message": f.message,
        "heuristic": f.heuristic,
        "suppressed": f.suppressed,
        "baselined": issue.baselined,
    }


def advice_entries(run: RunResult) -> list[dict[str, Any]]:
    """One object per piece of advice found: where, the pattern, its replacement, condition, gain
    and the fact behind it."""
    facts = {fact.id: fact for fact in run.advice}
    return [
        {
            "file": path,
            "line": f.start_line,
            "column": f.column or 1,
            "end_line": f.end_line,
            "rule": f.rule_id,
            "api": f.api,
            "found": fact.found,
            "replacement": fact.replacement,
            "condition": fact.condition,
            "gain": fact.gain,
            "source": f.source,
            "suppressed": f.suppressed,
        }
        for path, f in advice(run)
        if (fact := facts.get(f.rule_id)) is not None
    ]


def issues_json(run: RunResult, found: list[Issue]) -> bytes:
    """The issues with the run's release and input, one object each (and the advice, with --advice)."""
    document = {
        "tool": "ms_fmk_transplt",
        "version": __version__,
        "input": run.input_root,
        "release": run.release,
        "issues": [_row(issue) for issue in found],
        **({"advice": advice_entries(run)} if run.advice else {}),
    }
    return (json.dumps(document, indent=1) + "\n").encode()


def issues_csv(run: RunResult, found: list[Issue]) -> bytearray:
    """One row per issue, the JSON report's fields as columns."""
    return csv_text(FIELDS, (_row(issue) for issue in found))


def issues_sarif(run: RunResult, found: list[Issue], level: str = "note") -> bytes:
    """A SARIF 2.1.0 log of the issues at ``level`` or above: rule metadata from the rules'
    summaries, locations relative to the repository holding the input (the git top level; the
    input's folder when there is none), as code scanning reads them."""
    lowest = SARIF_LEVELS.index(level)
    found = [issue for issue in found if SARIF_LEVELS.index(_LEVEL[issue.status]) <= lowest]
    advised = advice(run) if level == "note" else []
    summaries = {rule_id: (kind, summary) for rule_id, kind, summary in run.rules}
    summaries.update({fact.id: ("advice", f"{fact.found} -> {fact.replacement}") for fact in run.advice})
    used = sorted({issue.finding.rule_id for issue in found} | {f.rule_id for _, f in advised})
    index = {rule_id: i for i, rule_id in enumerate(used)}
    rules = []
    for rule_id in used:
        kind, summary = summaries.get(rule_id, ("", rule_id))
        rules.append(
            {
                "id": rule_id,
                **({"name": kind} if kind else {}),
                "shortDescription": {"text": summary},
                "defaultConfiguration": {"level": "note" if kind == "advice" else "error"},
            }
        )
    root = Path(run.input_root).resolve()
    folder = root if root.is_dir() else root.parent
    base = repository_root(folder)
    results = []
    for issue in found:
        f = issue.finding
        result: dict[str, Any] = {
            "ruleId": f.rule_id,
            "ruleIndex": index[f.rule_id],
            "level": _LEVEL[issue.status],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(folder, base, issue.path), "uriBaseId": "%SRCROOT%"},
                        "region": {
                            "startLine": f.start_line,
                            "startColumn": f.column or 1,
                            "endLine": max(f.end_line, f.start_line),
                        },
                    }
                }
            ],
            "properties": {
                "status": issue.status.value,
                "api": f.api,
                "heuristic": f.heuristic,
                "source": f.source or f"rule {f.rule_id}",
            },
        }
        if f.fingerprint:
            result["partialFingerprints"] = {"msFmkTranspltLine/v1": f.fingerprint}
        if f.suppressed:
            result["suppressions"] = [
                {"kind": "inSource", "justification": "ms_fmk_transplt: ignore comment"}
            ]
        elif issue.baselined:
            result["suppressions"] = [{"kind": "external", "justification": "in the baseline file"}]
        results.append(result)
    facts = {fact.id: fact for fact in run.advice}
    results += [
        _advice_result(f, facts[f.rule_id], index[f.rule_id], _uri(folder, base, path))
        for path, f in advised
        if f.rule_id in facts
    ]
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "ms_fmk_transplt",
                        "version": __version__,
                        "informationUri": "https://pypi.org/project/ms-fmk-transplt/",
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": base.as_uri() + "/"}},
                "properties": {"release": run.release},
                "results": results,
            }
        ],
    }
    return (json.dumps(document, indent=1) + "\n").encode()


def _advice_result(f: Finding, fact: AdviceFact, rule_index: int, uri: str) -> dict[str, Any]:
    """A piece of advice as a SARIF `note` result."""
    result: dict[str, Any] = {
        "ruleId": f.rule_id,
        "ruleIndex": rule_index,
        "level": "note",
        "message": {"text": f"{f.message} (when {fact.condition}; gain: {fact.gain})"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                    "region": {
                        "startLine": f.start_line,
                        "startColumn": f.column or 1,
                        "endLine": max(f.end_line, f.start_line),
                    },
                }
            }
        ],
        "properties": {"status": "advice", "api": f.api, "source": f.source},
    }
    if f.fingerprint:
        result["partialFingerprints"] = {"msFmkTranspltLine/v1": f.fingerprint}
    if f.suppressed:
        result["suppressions"] = [{"kind": "inSource", "justification": "ms_fmk_transplt: ignore comment"}]
    return result


def repository_root(folder: Path) -> Path:
    """The top of the git work tree holding ``folder`` (a `.git` folder or file), else ``folder``."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def _uri(folder: Path, base: Path, path: str) -> str:
    """An issue's path (relative to the analysed folder, or absolute) relative to ``base``."""
    full = Path(path) if Path(path).is_absolute() else folder / path
    try:
        return full.relative_to(base).as_posix()
    except ValueError:
        return full.as_posix()


FORMATS: dict[str, Callable[[RunResult, list[Issue]], bytes | bytearray]] = {
    "json": issues_json,
    "csv": issues_csv,
    "sarif": issues_sarif,
}
