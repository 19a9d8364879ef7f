"""unsupported_op.xlsx: what Ascend cannot run, for people."""

from __future__ import annotations

import io

from openpyxl import Workbook
from openpyxl.styles import Font

from ms_fmk_transplt.model import RunResult, Status
from ms_fmk_transplt.reports.text import totals, unsupported_rows


def _sheet(workbook: Workbook, title: str, header: list[str], rows: list, first: bool = False):
    sheet = workbook.active if first else workbook.create_sheet()
    sheet.title = title
    sheet.append(header)
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    for row in rows:
        sheet.append(list(row))
    sheet.freeze_panes = "A2"
    for column, name in zip(sheet.columns, header):
        width = max([len(str(c.value or "")) for c in column] + [len(name)])
        sheet.column_dimensions[column[0].column_letter].width = min(width + 2, 100)
    return sheet


def unsupported_xlsx(run: RunResult) -> bytes:
    """Sheets: unsupported APIs, files that could not be converted, totals."""
    workbook = Workbook()
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
