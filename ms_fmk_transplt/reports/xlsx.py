"""unsupported_op.xlsx: what Ascend cannot run first, what to check per API after, for people."""

from __future__ import annotations

import io
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.records import Operation, RunResult, Status
from ms_fmk_transplt.reports.summary import blocking, by_api, headline
from ms_fmk_transplt.reports.text import totals

if TYPE_CHECKING:
    from openpyxl import Workbook


def _openpyxl() -> Any:
    """openpyxl, imported on first use and without numpy.

    openpyxl only probes for numpy to accept numpy scalars in cells; we never write any, and the
    probe alone costs ~0.2 s of start-up. A None entry in sys.modules makes that probe's import
    fail the documented way (ImportError) while openpyxl is first imported.
    """
    if "openpyxl" not in sys.modules and "numpy" not in sys.modules:
        sys.modules["numpy"] = None  # type: ignore[assignment]
        try:
            import openpyxl.styles
        finally:
            del sys.modules["numpy"]
    import openpyxl
    import openpyxl.cell
    import openpyxl.styles
    import openpyxl.utils

    return openpyxl


def _sheet(workbook: Workbook, title: str, header: list[str], rows: list) -> None:
    """A sheet with a bold frozen header, an autofilter and readable widths; every cell is text.

    The workbook is write-only: rows stream to a temporary file instead of living as cell
    objects (~0.5 KB each), so memory does not grow with the number of findings. Widths, the
    frozen header and the filter are set before the first row, as streaming requires.
    """
    openpyxl = _openpyxl()
    cell_type = openpyxl.cell.WriteOnlyCell
    sheet = workbook.create_sheet(title)
    values = [[_text(value) for value in row] for row in rows]
    widths = [len(name) for name in header]
    for row in values:
        for column, value in enumerate(row[: len(widths)]):
            widths[column] = max(widths[column], len(str(value or "")))
    letter = openpyxl.utils.get_column_letter
    for column, width in enumerate(widths, start=1):
        sheet.column_dimensions[letter(column)].width = min(width + 2, 80)
    sheet.freeze_panes = "A2"
    sheet.auto_filter.ref = f"A1:{letter(len(header))}{len(values) + 1}"
    bold = openpyxl.styles.Font(bold=True)
    heading = []
    for name in header:
        cell = cell_type(sheet, value=name)
        cell.font = bold
        heading.append(cell)
    sheet.append(heading)
    for row in values:
        cells = []
        for value in row:
            if isinstance(value, str):
                cell = cell_type(sheet, value=value)
                cell.data_type = "s"  # source text is untrusted: "=..." stays a string, never a formula
                cells.append(cell)
            else:
                cells.append(value)
        sheet.append(cells)


def _text(value: Any) -> Any:
    """Numbers stay numbers (lines, counts); everything else is written as text."""
    if isinstance(value, bool) or value is None:
        return "yes" if value else ""
    if isinstance(value, int):
        return value
    return str(value)


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
CHANGES_HEADER = ["File", "Start Line", "End Line", "Operation", "Rule", "Message", "Heuristic"]


def unsupported_xlsx(run: RunResult) -> bytes:
    """Sheets: Summary (read first), Unsupported (what will not run, one row per use, by file and
    line), Check on NPU (partial and not verified, one row per API), Changes (every rewrite), and
    Runtime ops when a runtime operator-check report was merged in."""
    from ms_fmk_transplt import __version__
    from ms_fmk_transplt.analysis import issues

    found = issues(run)
    workbook = _openpyxl().Workbook(write_only=True)
    where = {"reports in": run.output_root} if run.output_root else {}
    summary: list[tuple[str, Any]] = list(headline(run, found, where))
    summary += [
        ("tool", f"ms_fmk_transplt {__version__}"),
        ("input", run.input_root),
        ("release", f"Ascend data for PyTorch {run.release}"),
    ]
    by_status = Counter(i.status.value for i in found)
    summary += [(f"issues {status}", count) for status, count in sorted(by_status.items())]
    summary += [
        (f"files {key.removeprefix('files_')}", n)
        for key, n in totals(run).items()
        if key.startswith("files_")
    ]
    by_file = Counter(i.path for i in found)
    summary += [(f"issues in {path}", count) for path, count in sorted(by_file.items())]
    summary += [
        (f"not converted: {r.path}", r.reason)
        for r in run.files
        if r.status in (Status.FAILED, Status.SKIPPED)
    ]
    _sheet(workbook, "Summary", ["Item", "Value"], summary)
    _sheet(
        workbook,
        "Unsupported",
        UNSUPPORTED_HEADER,
        [
            (
                i.path,
                i.finding.start_line,
                i.finding.column or 1,
                i.finding.api,
                i.status.value,
                i.finding.suggestion,
                i.finding.source or f"rule {i.finding.rule_id}",
                i.finding.rule_id,
                i.finding.heuristic,
                i.finding.message,
                i.finding.suppressed,
            )
            for i in blocking(found)
        ],
    )
    _sheet(
        workbook,
        "Check on NPU",
        CHECK_HEADER,
        [
            (
                row.api,
                row.status.value,
                row.dtypes,
                row.uses,
                ", ".join(row.files),
                row.first,
                row.source,
                row.suggestion,
                row.rule,
                row.heuristic,
            )
            for row in by_api(found)
        ],
    )
    changes = [
        (r.path, f.start_line, f.end_line, f.operation.value, f.rule_id, f.message, f.heuristic)
        for r in run.files
        for f in r.findings
        if f.operation not in (Operation.UNSUPPORTED, Operation.CHECK)
    ]
    _sheet(workbook, "Changes", CHANGES_HEADER, changes)
    if run.runtime_ops:  # the simulated NPU's run-time evidence beside the static findings
        _sheet(
            workbook,
            "Runtime ops",
            RUNTIME_HEADER,
            [(o.op, o.count, o.status, o.unsupported_dtypes, o.first_call_site) for o in run.runtime_ops],
        )
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()
