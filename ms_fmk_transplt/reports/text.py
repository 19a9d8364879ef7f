"""msFmkTranspltlog.txt, change_list.csv and report.json."""

from __future__ import annotations

import json
from collections import Counter

from ms_fmk_transplt import __version__
from ms_fmk_transplt.analysis import advice, is_change, issues, notes, status_of
from ms_fmk_transplt.records import Finding, RunResult, Status
from ms_fmk_transplt.reports.csv_cells import csv_text
from ms_fmk_transplt.reports.pieces import Piece, Utf8Buffer
from ms_fmk_transplt.reports.summary import blocking, checks, headline

CSV_HEADER = ["File", "Start Line", "End Line", "Operation Type", "Message", "Rule"]


def totals(run: RunResult) -> dict[str, int]:
    """Counts by file status and by finding operation, for logs and summaries."""
    counts: Counter[str] = Counter()
    for result in run.files:
        counts[f"files_{result.status.value}"] += 1
        if result.supported:  # supported API uses are counted, never listed
            counts["api_uses_supported"] += result.supported
        if result.supported_by_kernel:
            counts["api_uses_supported_by_kernel"] += result.supported_by_kernel
        for finding in result.findings:
            counts[f"findings_{finding.operation.value.lower()}"] += 1
    counts["files_python"] = sum(counts[f"files_{s}"] for s in ("converted", "unchanged", "failed"))
    return dict(sorted(counts.items()))


def log_text(run: RunResult) -> bytes:
    """The human log: what will not run on the NPU first, then every change, then the uses to check
    (each issue with the status every other report gives it), skipped and failed files, totals."""
    return b"".join(log_around(run, log_body(run)))


def log_around(run: RunResult, body: Piece) -> tuple[Piece, ...]:
    """The log's pieces around its body (`log_body`): the run's header before it, its time after."""
    head = (
        f"ms_fmk_transplt {__version__}\n"
        f"input:   {run.input_root}\noutput:  {run.output_root}\n"
        f"release: Ascend data for PyTorch {run.release}\n"
        f"rules:   built-in{''.join(', ' + r for r in run.rule_files)}\n\n"
    )
    return head.encode(), body, f"seconds: {run.seconds:.2f}\n".encode()


def log_body(run: RunResult) -> bytearray:
    """The log from its summary to its totals: a function of the results alone, not of the output
    folder or the time taken (so a warm run can reuse it)."""
    found = issues(run)
    out = Utf8Buffer()
    out.write("== summary ==\n")
    for item, said in headline(run, found):
        out.write(f"{item}: {said}\n" if item else f"  {said}\n")
    out.write("\n== will not run on the NPU as written (unsupported, unsupported-dtype, no-effect) ==\n")
    for issue in blocking(found):
        out.write(_line(issue.path, issue.finding, issue.status.value))
    # the changes before the classification's "check it on the NPU" notes (one per partially
    # supported or unlisted API use), so that those never bury a change
    out.write("\n== changes ==\n")
    for result in run.files:
        for f in result.findings:
            if is_change(f):
                out.write(_line(result.path, f, f.operation.value))
    out.write("\n== to check on the NPU (partial or not verified) ==\n")
    for issue in checks(found):
        out.write(_line(issue.path, issue.finding, issue.status.value))
    out.write("\n== notes (what the conversion left to you) ==\n")
    for path, f in notes(run):
        out.write(_line(path, f, "NOTE"))
        if f.suggestion:
            out.write(f"    what to do: {f.suggestion}\n")
    if run.advice:  # --advice: the section only when asked for
        out.write("\n== advice (a faster form on the NPU) ==\n")
        for path, f in advice(run):
            out.write(_line(path, f, "ADVICE"))
            out.write(f"    use {f.suggestion}\n")
    out.write("\n== skipped files ==\n")
    for result in run.files:
        if result.status is Status.SKIPPED:
            out.write(f"{result.path}: {result.reason}\n")
    links = [r for r in run.files if r.status is Status.LINKED and r.reason]
    if links:  # a section only when there is one: most inputs link nothing outside themselves
        out.write("\n== symlinks reproduced, not followed ==\n")
        out.write("".join(f"{r.path}: {r.reason}\n" for r in links))
    if run.left_out:  # a section only when there is one: most inputs hold no earlier output
        out.write("\n== not walked: output of an earlier ms_fmk_transplt run ==\n")
        out.write("".join(f"{rel}\n" for rel in run.left_out))
    out.write("\n== failed files (copied unchanged) ==\n")
    for result in run.files:
        if result.status is Status.FAILED:
            out.write(f"{result.path}: {result.reason}\n")
            if result.detail:
                out.write("".join(f"    {line}\n" for line in result.detail.splitlines()))
    out.write("\n== totals ==\n")
    for key, value in totals(run).items():
        out.write(f"{key}: {value}\n")
    return out.data


def _line(path: str, f: Finding, what: str) -> str:
    """`path:lines [rule] WHAT message`: WHAT is a change's operation or an issue's status."""
    lines = f"{f.start_line}" if f.start_line == f.end_line else f"{f.start_line}-{f.end_line}"
    note = " (heuristic)" if f.heuristic else ""
    return f"{path}:{lines} [{f.rule_id}] {what.upper()} {f.message}{note}\n"


def change_list_csv(run: RunResult) -> bytearray:
    """One row per finding, positions in the original file."""
    return csv_text(
        CSV_HEADER,
        (
            (result.path, f.start_line, f.end_line, f.operation.value, f.message, f.rule_id)
            for result in run.files
            for f in result.findings
        ),
    )


def summary_json(run: RunResult) -> bytes:
    """Everything in machine-readable form, for CI gates: one line per file.

    json's C encoder runs only without `indent`; with it, a tree of 100k findings took seconds.
    So each file's entry is encoded compactly on a line of its own, which keeps the document
    valid JSON and a diff line-by-file."""
    return b"".join(summary_around(run, summary_body(run)))


def summary_around(run: RunResult, body: bytes | bytearray) -> tuple[Piece, ...]:
    """report.json's pieces from its body (`summary_body`): this run's header with the body's
    totals, then the body's file entries (a view of them, not a copy), then the closing."""
    end = body.index(b"\n")
    view = memoryview(body)
    head = {
        "tool": "ms_fmk_transplt",
        "version": __version__,
        "input": run.input_root,
        "output": run.output_root,
        "release": run.release,
        "rule_files": list(run.rule_files),
        "totals": json.loads(bytes(view[:end])),
    }
    opening = json.dumps(head, indent=1)[:-2]  # without the closing "\n}"
    return f'{opening},\n "files": [\n'.encode(), view[end + 1 :], b"\n ]\n}\n"


def summary_body(run: RunResult) -> bytearray:
    """report.json's totals on one line, then its file entries, one a line: a function of the
    results alone (so a warm run reuses it; the totals read every finding). Built in one buffer."""
    encode = json.JSONEncoder(separators=(",", ":")).encode
    out = bytearray(json.dumps(totals(run)).encode())
    out += b"\n"
    for index, r in enumerate(run.files):
        if index:
            out += b",\n"
        out += encode(
            {
                "path": r.path,
                "status": r.status.value,
                **({"reason": r.reason} if r.reason else {}),
                "findings": [
                    {
                        "rule": f.rule_id,
                        "operation": f.operation.value,
                        "start_line": f.start_line,
                        "end_line": f.end_line,
                        "message": f.message,
                        "heuristic": f.heuristic,
                        **({"status": status.value} if (status := status_of(f)) is not None else {}),
                    }
                    for f in r.findings
                ],
            }
        ).encode()
    return out
