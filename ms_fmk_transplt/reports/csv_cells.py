"""CSV cells a spreadsheet opens as text: a value starting with =, +, -, @ (or a tab or carriage
return) would be taken for a formula (CSV injection), so it gets a leading single quote, the mark
spreadsheets read as "text follows". Numbers are written as they are."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ms_fmk_transplt.reports.pieces import Utf8Buffer

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    """`value`, quoted with a leading ' when a spreadsheet would read it as a formula."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def plain(text: str) -> str:
    """A cell's text as it was before `cell` quoted it (a CSV this tool or the runtime wrote, read back)."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_STARTS) else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any] | Mapping[str, Any]]) -> bytearray:
    """A CSV document (`\\n` line ends) of `header` and `rows` (sequences in its order, or mappings
    by its names), every cell made safe to open in a spreadsheet; UTF-8, built in one buffer."""
    out = Utf8Buffer()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        values = [row.get(name, "") for name in header] if isinstance(row, Mapping) else row
        writer.writerow([cell(value) for value in values])
    return out.data
