"""A streaming writer of .xlsx workbooks (Office Open XML spreadsheets), for the reports' needs only.

What a report sheet needs: text and whole-number cells, a bold header row kept in view, an
autofilter over the table and readable column widths. openpyxl's write-only mode took ~160 µs per
row of the Unsupported sheet and ~60-170 ms of import at start; here rows are XML text written
straight into the zip as they come, ~25 µs per row, and the import is zipfile's
(`bench/xlsx_speed.py` measures both in one run).

Every string is an inline string (`t="inlineStr"`): never a formula, whatever it starts with
(source text is untrusted). Characters XML 1.0 cannot hold are written as OOXML's `_xHHHH_`
escapes. A sheet holds at most `MAX_ROWS` rows, the format's limit; the caller splits longer
tables (reports/xlsx.py says so in its Summary).
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable, Sequence

MAX_ROWS = 1_048_576  # rows in one sheet, the header included (the format's limit)
MAX_WIDTH = 80
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PACKAGE_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
# characters XML 1.0 cannot hold, and the escape's own underscore form (so it reads back as written)
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]|_(?=x[0-9A-Fa-f]{4}_)")
_BAD_TITLE = re.compile(r"[\[\]:*?/\\]")
_BOLD = ' s="1"'  # the header's style: cellXfs 1 in styles.xml
# a carriage return as a reference: XML readers turn a literal one into a line feed
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})

Value = str | int | float | None


def column_letter(index: int) -> str:
    """1 -> A, 27 -> AA."""
    letters = ""
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _xml_text(value: str) -> str:
    text = value.translate(_ESCAPES)
    if _ILLEGAL.search(text):
        text = _ILLEGAL.sub(lambda m: "_x005F_" if m.group() == "_" else f"_x{ord(m.group()):04X}_", text)
    return text


def _cell(reference: str, value: Value, style: str = "") -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, bool):
        value = "yes" if value else ""
        if not value:
            return ""
    if isinstance(value, (int, float)):
        return f'<c r="{reference}"{style}><v>{value}</v></c>'
    text = _xml_text(str(value))
    space = ' xml:space="preserve"' if text != text.strip() else ""
    return f'<c r="{reference}"{style} t="inlineStr"><is><t{space}>{text}</t></is></c>'


class Workbook:
    """Sheets added one at a time, each written out as it is added; `close()` gives the bytes."""

    def __init__(self) -> None:
        self._buffer = io.BytesIO()
        self._zip = zipfile.ZipFile(self._buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=6)
        self._titles: list[str] = []
        self._filters: list[str] = []  # each sheet's autofilter range, absolute ($A$1:$K$9)

    def add_sheet(self, title: str, header: Sequence[str], rows: Sequence[Sequence[Value]]) -> None:
        """A sheet with a bold frozen header, an autofilter and widths fitted to the text (<= 80)."""
        if len(rows) + 1 > MAX_ROWS:
            raise ValueError(f"sheet {title!r}: {len(rows) + 1} rows is over the format's {MAX_ROWS}")
        title = _BAD_TITLE.sub("_", title)[:31] or "Sheet"
        self._titles.append(title)
        widths = [len(name) for name in header]
        for row in rows:
            for column, value in enumerate(row[: len(widths)]):
                if value is not None:
                    width = len(value) if isinstance(value, str) else len(str(value))
                    if width > widths[column]:
                        widths[column] = width
        letters = [column_letter(i) for i in range(1, len(header) + 1)]
        last = f"{letters[-1]}{len(rows) + 1}" if letters else "A1"
        self._filters.append(f"$A$1:${letters[-1] if letters else 'A'}${len(rows) + 1}")
        cols = "".join(
            f'<col min="{i}" max="{i}" width="{min(w + 2, MAX_WIDTH)}" customWidth="1"/>'
            for i, w in enumerate(widths, start=1)
        )
        with self._zip.open(f"xl/worksheets/sheet{len(self._titles)}.xml", "w") as out:
            out.write(
                (
                    f'{_HEAD}<worksheet xmlns="{_MAIN}"><dimension ref="A1:{last}"/>'
                    '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2"'
                    ' activePane="bottomLeft" state="frozen"/></sheetView></sheetViews>'
                    f"<cols>{cols}</cols><sheetData>"
                    f'<row r="1">{"".join(_cell(c + "1", v, _BOLD) for c, v in zip(letters, header))}</row>'
                ).encode()
            )
            out.writelines(self._rows(rows, letters))
            out.write(f'</sheetData><autoFilter ref="A1:{last}"/></worksheet>'.encode())

    @staticmethod
    def _rows(rows: Iterable[Sequence[Value]], letters: list[str]) -> Iterable[bytes]:
        chunk: list[str] = []
        for number, row in enumerate(rows, start=2):
            cells = "".join(_cell(f"{c}{number}", v) for c, v in zip(letters, row))
            chunk.append(f'<row r="{number}">{cells}</row>')
            if len(chunk) == 2000:
                yield "".join(chunk).encode()
                chunk = []
        if chunk:
            yield "".join(chunk).encode()

    def close(self) -> bytes:
        """Write the workbook's other parts and return the file's bytes."""
        sheets = range(1, len(self._titles) + 1)
        write = self._zip.writestr
        write(
            "[Content_Types].xml",
            f'{_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/styles.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
            + "".join(
                f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="application/'
                'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
                for i in sheets
            )
            + "</Types>",
        )
        write(
            "_rels/.rels",
            f'{_HEAD}<Relationships xmlns="{_PACKAGE_REL}"><Relationship Id="rId1" '
            f'Type="{_REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        write(
            "xl/_rels/workbook.xml.rels",
            f'{_HEAD}<Relationships xmlns="{_PACKAGE_REL}">'
            + "".join(
                f'<Relationship Id="rId{i}" Type="{_REL}/worksheet" Target="worksheets/sheet{i}.xml"/>'
                for i in sheets
            )
            + f'<Relationship Id="rId{len(self._titles) + 1}" Type="{_REL}/styles" Target="styles.xml"/>'
            "</Relationships>",
        )
        names = "".join(
            f'<definedName name="_xlnm._FilterDatabase" localSheetId="{i - 1}" hidden="1">'
            f"'{_xml_text(title).replace(chr(39), chr(39) * 2)}'!{where}</definedName>"
            for i, title, where in zip(sheets, self._titles, self._filters)
        )
        write(
            "xl/workbook.xml",
            f'{_HEAD}<workbook xmlns="{_MAIN}" xmlns:r="{_REL}"><bookViews><workbookView/></bookViews><sheets>'
            + "".join(
                f'<sheet name="{_xml_text(title).replace(chr(34), "&quot;")}" sheetId="{i}" r:id="rId{i}"/>'
                for i, title in zip(sheets, self._titles)
            )
            + f"</sheets><definedNames>{names}</definedNames></workbook>"
            if self._titles
            else f'{_HEAD}<workbook xmlns="{_MAIN}" xmlns:r="{_REL}"><sheets/></workbook>',
        )
        write(
            "xl/styles.xml",
            f'{_HEAD}<styleSheet xmlns="{_MAIN}">'
            '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font>'
            '<font><b/><sz val="11"/><name val="Calibri"/></font></fonts>'
            '<fills count="2"><fill><patternFill patternType="none"/></fill>'
            '<fill><patternFill patternType="gray125"/></fill></fills>'
            '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
            '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
            '<cellXfs count="2"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
            '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/></cellXfs>'
            '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
            "</styleSheet>",
        )
        self._zip.close()
        return self._buffer.getvalue()
