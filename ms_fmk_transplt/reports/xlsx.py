"""unsupported_op.xlsx: what Ascend cannot run first, what to check per API after, for people."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.records import RunResult, Status
from ms_fmk_transplt.reports.spreadsheet import MAX_ROWS, Workbook
from ms_fmk_transplt.reports.summary import blocking, by_api, headline
from ms_fmk_transplt.reports.text import totals

if TYPE_CHECKING:
    from ms_fmk_transplt.analysis import Issue


def _sheet(workbook: Workbook, title: str, header: list[str], rows: Sequence[Sequence[Any]]) -> None:
    """A sheet with a bold frozen header, an autofilter and readable widths; numbers stay numbers,
    everything else is text. A table longer than one sheet holds continues on "<title> (2)", ..."""
    values = [[_text(value) for value in row] for row in rows]
    per_sheet = MAX_ROWS - 1
    for number, start in enumerate(range(0, max(len(values), 1), per_sheet), start=1):
        workbook.add_sheet(
            title if number == 1 else f"{title} ({number})", header, values[start : start + per_sheet]
        )


def _split_notes(tables: dict[str, list[tuple[Any, ...]]]) -> list[tuple[str, Any]]:
    """Summary lines for the tables too long for one sheet."""
    per_sheet = MAX_ROWS - 1
    return [
        (
            f"sheet {title}",
            f"{len(rows):,} rows, over one sheet's limit: split into {-(-len(rows) // per_sheet)} sheets",
        )
        for title, rows in tables.items()
        if len(rows) > per_sheet
    ]


# Excel refuses a cell longer than this (a workbook with one opens "repaired", the cell emptied)
CELL_LIMIT = 32767
CUT = " ... (cut at a cell's 32,767 characters; report.json has it whole)"
# the Summary is read first: the files with the most issues and the files not converted, at most
# this many each, the rest counted in one row (the log and report.json list every one)
SUMMARY_FILES = 20
LISTED_FILES = 30  # files named in one cell of the Check sheet; the rest counted
LISTED_LINES = 50  # lines named in one cell of the Unsupported sheet; the rest counted


def _by_cause(found: list[Issue]) -> list[tuple[Any, ...]]:
    """The Unsupported sheet's rows: one per cause in a file (the same rule, status, API and
    message: every use of one CUDA-only library, of one unsupported API), at its first use, with
    the number of uses and their lines. `found` is in file and line order."""
    rows: dict[tuple[str, str, str, str, str, bool], list[Any]] = {}
    for i in found:
        f = i.finding
        key = (i.path, f.rule_id, i.status.value, f.api, f.message, f.suppressed)
        row = rows.get(key)
        if row is None:
            rows[key] = row = [
                i.path, f.start_line, f.column or 1, f.api, i.status.value, f.suggestion,
                f.source or f"rule {f.rule_id}", f.rule_id, f.heuristic, f.message, f.suppressed, 0, [],
            ]  # fmt: skip
        row[11] += 1
        row[12].append(f.start_line)
    return [(*row[:12], _lines(row[12])) for row in rows.values()]


def _lines(lines: list[int]) -> str:
    shown = ", ".join(map(str, lines[:LISTED_LINES]))
    more = len(lines) - LISTED_LINES
    return f"{shown} and {more} more (the log lists every one)" if more > 0 else shown


def _text(value: Any) -> Any:
    """Numbers stay numbers (lines, counts); everything else is written as text, cut to a cell's
    limit with a note where it was cut."""
    if isinstance(value, bool) or value is None:
        return "yes" if value else ""
    if isinstance(value, int):
        return value
    text = str(value)
    return text if len(text) <= CELL_LIMIT else text[: CELL_LIMIT - len(CUT)] + CUT


def _listed(names: list[str]) -> str:
    """Names for one cell: the first LISTED_FILES, then how many more."""
    shown = ", ".join(names[:LISTED_FILES])
    more = len(names) - LISTED_FILES
    return f"{shown} and {more} more (report.json lists every one)" if more > 0 else shown


def _bounded(rows: list[tuple[str, Any]], rest: str) -> list[tuple[str, Any]]:
    """At most SUMMARY_FILES rows, then one row counting the others (`rest` names them)."""
    if len(rows) <= SUMMARY_FILES:
        return rows
    return [*rows[:SUMMARY_FILES], (rest.format(len(rows) - SUMMARY_FILES), "see the log and report.json")]


UNSUPPORTED_HEADER = [
    "File",
    "Line",
    "Column",
    "API",
    "Status",
    "What to do",
    "Decided by",
    "Rule",
    "Heuristic",
    "Message",
    "Suppressed",
    "Uses",
    "Lines",
]
CHECK_HEADER = [
    "API",
    "Status",
    "Supported dtypes",
    "Uses",
    "Files",
    "First use",
    "Decided by",
    "What to do",
    "Rule",
    "Heuristic uses",
]
RUNTIME_HEADER = ["Op", "Calls", "Status", "Unsupported dtypes", "First call site"]
FINDINGS_HEADER = ["Kind", "What", "Dependency site", "User site", "Count", "Shapes"]
CHANGES_HEADER = ["File", "Start Line", "End Line", "Operation", "Rule", "Message", "Heuristic"]
NOTES_HEADER = ["File", "Start Line", "End Line", "Rule", "Message", "What to do"]
ADVICE_HEADER = [
    "File",
    "Line",
    "Pattern found",
    "NPU replacement",
    "Condition",
    "Expected gain",
    "Source",
    "Rule",
    "Suppressed",
]


def advice_rows(run: RunResult) -> list[tuple[Any, ...]]:
    """The Advice sheet: each pattern found, where, with its replacement, condition, gain and source."""
    from ms_fmk_transplt.analysis import advice

    facts = {fact.id: fact for fact in run.advice}
    rows = []
    for path, f in advice(run):
        fact = facts.get(f.rule_id)
        if fact is None:  # a cached result of another catalogue cannot reach here (the key holds it)
            continue
        rows.append(
            (
                path,
                f.start_line,
                fact.found,
                fact.replacement,
                fact.condition,
                fact.gain,
                f.source,
                f.rule_id,
                f.suppressed,
            )
        )
    return rows


def unsupported_xlsx(run: RunResult) -> bytes:
    """Sheets: Summary (read first), Unsupported (what will not run, one row per cause in a file,
    by file and first line, with its uses and their lines), Check on NPU (partial and not verified, one row per API), Changes (every rewrite), Notes
    (findings that are neither, when there are any), Advice (with --advice) and Runtime ops or
    Runtime findings when a runtime operator-check or findings report was merged in."""
    from ms_fmk_transplt import __version__
    from ms_fmk_transplt.analysis import is_change, issues, notes

    found = issues(run)
    tables: dict[str, list[tuple[Any, ...]]] = {
        "Unsupported": _by_cause(blocking(found)),
        "Check on NPU": [
            (
                row.api,
                row.status.value,
                row.dtypes,
                row.uses,
                _listed(list(row.files)),
                row.first,
                row.source,
                row.suggestion,
                row.rule,
                row.heuristic,
            )
            for row in by_api(found)
        ],
        "Changes": [
            (r.path, f.start_line, f.end_line, f.operation.value, f.rule_id, f.message, f.heuristic)
            for r in run.files
            for f in r.findings
            if is_change(f)
        ],
    }
    headers = {"Unsupported": UNSUPPORTED_HEADER, "Check on NPU": CHECK_HEADER, "Changes": CHANGES_HEADER}
    left = notes(run)
    if left:  # what the conversion could not do for the user (the distributed mode's DS1xx)
        tables["Notes"] = [(p, f.start_line, f.end_line, f.rule_id, f.message, f.suggestion) for p, f in left]
        headers["Notes"] = NOTES_HEADER
    if run.advice:  # --advice: one row per pattern found, even none found is news
        tables["Advice"] = advice_rows(run)
        headers["Advice"] = ADVICE_HEADER
    if run.runtime_findings is not None:  # a findings report; none found is news too
        tables["Runtime findings"] = [
            (f.kind, f.what, f.dependency_site, f.user_site, f.count, " / ".join(f.shapes))
            for f in run.runtime_findings
        ]
        headers["Runtime findings"] = FINDINGS_HEADER
    elif run.runtime_report:  # the run-time evidence beside the static findings; no ops is news too
        tables["Runtime ops"] = [
            (o.op, o.count, o.status, o.unsupported_dtypes, o.first_call_site) for o in run.runtime_ops
        ]
        headers["Runtime ops"] = RUNTIME_HEADER
    where = {"reports in": run.output_root} if run.output_root else {}
    summary: list[tuple[str, Any]] = list(headline(run, found, where))
    summary += [
        ("tool", f"ms_fmk_transplt {__version__}"),
        ("input", run.input_root),
        ("release", f"Ascend data for PyTorch {run.release}"),
    ]
    by_status = Counter(i.status.value for i in found)
    summary += [(f"issues {status}", count) for status, count in sorted(by_status.items())]
    if run.advice:
        summary.append(
            ("advice", f"{len(tables['Advice'])} places where torch_npu has a faster form (sheet Advice)")
        )
    summary += [
        (f"files {key.removeprefix('files_')}", n)
        for key, n in totals(run).items()
        if key.startswith("files_")
    ]
    by_file = Counter(i.path for i in found)
    most = sorted(by_file.items(), key=lambda item: (-item[1], item[0]))  # the most first
    summary += _bounded([(f"issues in {path}", count) for path, count in most], "issues in {} other files")
    failed = [
        (f"not converted: {r.path}", r.reason)
        for r in run.files
        if r.status in (Status.FAILED, Status.SKIPPED)
    ]
    summary += _bounded(failed, "not converted: {} other files")
    summary += _split_notes(tables)
    workbook = Workbook()
    _sheet(workbook, "Summary", ["Item", "Value"], summary)
    for title, rows in tables.items():
        _sheet(workbook, title, headers[title], rows)
    return workbook.close()
