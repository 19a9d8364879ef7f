"""CSV cells a spreadsheet opens as text, for the operator-check report.

A value starting with =, +, -, @ (or a tab or carriage return) would be read as a formula (CSV
injection: a call site's file name is the user's), so it is written with a leading single quote,
the mark spreadsheets read as "text follows"; `plain` takes the mark off again when the report is
read back (the processes of one run merge their rows). The converter has the same rule in
ms_fmk_transplt/reports/csv_cells.py: the runtime never imports the converter, so it is kept
twice, and tests/runtime/test_opcheck_csv.py holds the two equal.
"""

from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    """`value`, quoted with a leading ' when a spreadsheet would read it as a formula; numbers as they are."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def plain(text: str) -> str:
    """A cell's text as it was before `cell` quoted it."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_STARTS) else text
