"""unsupported_op.xlsx: what Ascend cannot run, for people."""

from __future__ import annotations

import io
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.model import Operation, RunResult, Status
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


def unsupported_xlsx(run: RunResult) -> bytes:
    """Sheets: Unsupported (one row per issue), Changes (every rewrite), Summary (counts, release, input)."""
    from ms_fmk_transplt import __version__
    from ms_fmk_transplt.analysis import issues

    found = issues(run)
    workbook = _openpyxl().Workbook(write_only=True)
    _sheet(
        workbook,
        "Unsupported",
        [
            "File",
            "Line",
            "Column",
            "API",
            "Status",
            "Supported dtypes",
            "Suggestion",
            "Rule",
            "Heuristic",
            "Message",
            "Suppressed",
        ],
        [
            (
                i.path,
                i.finding.start_line,
                i.finding.column or 1,
                i.finding.api,
                i.status.value,
                i.finding.dtypes,
                i.finding.suggestion,
                i.finding.rule_id,
                i.finding.heuristic,
                i.finding.message,
                i.finding.suppressed,
            )
            for i in found
        ],
    )
    changes = [
        (r.path, f.start_line, f.end_line, f.operation.value, f.rule_id, f.message, f.heuristic)
        for r in run.files
        for f in r.findings
        if f.operation is not Operation.UNSUPPORTED
    ]
    _sheet(
        workbook,
        "Changes",
        ["File", "Start Line", "End Line", "Operation", "Rule", "Message", "Heuristic"],
        changes,
    )
    by_status = Counter(i.status.value for i in found)
    by_file = Counter(i.path for i in found)
    summary: list[tuple[str, Any]] = [
        ("tool", f"ms_fmk_transplt {__version__}"),
        ("input", run.input_root),
        ("release", f"Ascend data for PyTorch {run.release}"),
    ]
    summary += [(f"issues {status}", count) for status, count in sorted(by_status.items())]
    summary += [
        (f"files {key.removeprefix('files_')}", n)
        for key, n in totals(run).items()
        if key.startswith("files_")
    ]
    summary += [(f"issues in {path}", count) for path, count in sorted(by_file.items())]
    summary += [
        (f"not converted: {r.path}", r.reason)
        for r in run.files
        if r.status in (Status.FAILED, Status.SKIPPED)
    ]
    _sheet(workbook, "Summary", ["Item", "Value"], summary)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()
