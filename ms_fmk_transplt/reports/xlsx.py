"""unsupported_op.xlsx: what Ascend cannot run, for people."""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.model import RunResult, Status
from ms_fmk_transplt.reports.text import totals, unsupported_rows

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
    import openpyxl.styles

    return openpyxl


def _sheet(workbook: Workbook, title: str, header: list[str], rows: list, first: bool = False) -> Any:
    font = _openpyxl().styles.Font
    sheet = workbook.active if first else workbook.create_sheet()
    sheet.title = title
    sheet.append(header)
    for cell in sheet[1]:
        cell.font = font(bold=True)
    for row in rows:
        sheet.append(list(row))
    sheet.freeze_panes = "A2"
    for column, name in zip(sheet.columns, header):
        width = max([len(str(c.value or "")) for c in column] + [len(name)])
        sheet.column_dimensions[column[0].column_letter].width = min(width + 2, 100)
    return sheet


def unsupported_xlsx(run: RunResult) -> bytes:
    """Sheets: unsupported APIs, files that could not be converted, totals."""
    workbook = _openpyxl().Workbook()
    _sheet(
        workbook,
        "Unsupported",
        ["File", "Start Line", "End Line", "Rule", "Message"],
        unsupported_rows(run),
        first=True,
    )
    failed = [
        (r.path, r.status.value, r.reason) for r in run.files if r.status in (Status.FAILED, Status.SKIPPED)
    ]
    _sheet(workbook, "Not converted", ["File", "Status", "Reason"], failed)
    _sheet(workbook, "Totals", ["Item", "Count"], list(totals(run).items()))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()
