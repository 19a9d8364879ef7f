"""Small helpers shared by the converter tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ms_fmk_transplt.engine.conversion import convert_source
from ms_fmk_transplt.records import FileResult, Operation


def convert_text(text: str, tables, path: str = "t.py") -> tuple[str, FileResult]:
    """Convert source text; returns the new text (the input when unchanged) and the result."""
    result = convert_source(path, text.encode(), tables)
    return (result.output.decode() if result.output is not None else text), result


def findings_text(result: FileResult, checks: bool = True) -> str:
    """The findings as the snapshot lines kept in *.findings files.

    `checks=False` leaves out the CHECK findings with a support status (partial / not verified)
    that every torch call gets, so that fixtures about rewrites show the rewrites; the support
    fixtures keep them. Notes (CHECK without a status: a literal kept on purpose) always show.
    """
    lines = []
    for f in result.findings:
        if f.operation is Operation.CHECK and f.support is not None and not checks:
            continue
        span = f"{f.start_line}" if f.start_line == f.end_line else f"{f.start_line}-{f.end_line}"
        lines.append(f"{span} {f.operation.value} {f.rule_id} {f.message}")
    return "".join(line + "\n" for line in lines)


def run_verify(
    options: list[str], command: list[str], cwd: Path, report: Path, timeout: float
) -> tuple[subprocess.CompletedProcess, dict]:
    """`ms_fmk_transplt verify OPTIONS --report REPORT -- COMMAND` from `cwd`, one OpenMP thread:
    the finished process and the JSON report (empty when none was written)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ms_fmk_transplt",
            "verify",
            *options,
            "--report",
            str(report),
            "--",
            *command,
        ],
        cwd=cwd,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done, json.loads(report.read_text()) if report.exists() else {}


def check_verify(runs: dict, case: str, code: int) -> tuple[subprocess.CompletedProcess, dict]:
    """One case of a module's verify runs: exited `code`, and its JSON report says so."""
    done, document = runs[case]
    assert done.returncode == code, done.stdout + done.stderr
    assert document["exit_code"] == code
    return done, document
