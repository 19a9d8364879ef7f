#!/usr/bin/env python3
"""The xlsx report's cost per row: reports/spreadsheet.py beside openpyxl's write-only mode.

Writes one Unsupported-style sheet of N rows (11 columns, as reports/xlsx.py writes them) with
each writer in the same process, and prints seconds, microseconds per row, the file's size and
each writer's import time::

    .venv/bin/python bench/xlsx_speed.py --rows 100000
"""

from __future__ import annotations

import argparse
import importlib
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HEADER = [
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


def _rows(count: int) -> list[tuple[object, ...]]:
    return [
        (
            f"models/block_{i % 400}.py",
            i % 3000 + 1,
            9,
            f"torch.nn.functional.op_{i % 60}",
            "unsupported",
            "run it on the CPU (.cpu() in, .npu() out) or replace it",
            "PyTorch 2.12.0 support list",
            "TP901",
            "yes" if i % 7 == 0 else "",
            f"torch.nn.functional.op_{i % 60} is unsupported on Ascend (PyTorch 2.12.0 support list)",
            "",
        )
        for i in range(count)
    ]


def ours(rows: list[tuple[object, ...]]) -> bytes:
    from ms_fmk_transplt.reports.spreadsheet import Workbook

    book = Workbook()
    book.add_sheet("Unsupported", HEADER, rows)
    return book.close()


def theirs(rows: list[tuple[object, ...]]) -> bytes:
    import openpyxl
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Unsupported")
    sheet.freeze_panes = "A2"
    bold = Font(bold=True)
    heading = []
    for name in HEADER:
        cell = WriteOnlyCell(sheet, value=name)
        cell.font = bold
        heading.append(cell)
    sheet.append(heading)
    for row in rows:
        cells: list[object] = []
        for value in row:
            if isinstance(value, str):
                cell = WriteOnlyCell(sheet, value=value)
                cell.data_type = "s"
                cells.append(cell)
            else:
                cells.append(value)
        sheet.append(cells)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    rows = _rows(args.rows)
    print("| writer | import ms | rows | write s | us/row | size MB |\n|---|---:|---:|---:|---:|---:|")
    for name, module, write in (
        ("reports/spreadsheet.py", "ms_fmk_transplt.reports.spreadsheet", ours),
        ("openpyxl write-only", "openpyxl", theirs),
    ):
        start = time.perf_counter()
        try:
            importlib.import_module(module)
        except ImportError:
            print(f"| {name} | not installed | | | | |")
            continue
        imported = time.perf_counter()
        data = write(rows)
        done = time.perf_counter()
        print(
            f"| {name} | {(imported - start) * 1000:.0f} | {len(rows):,} | {done - imported:.2f} "
            f"| {(done - imported) / len(rows) * 1e6:.1f} | {len(data) / 1e6:.1f} |"
        )


if __name__ == "__main__":
    main()
