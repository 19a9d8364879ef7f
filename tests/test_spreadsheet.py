"""reports/spreadsheet.py writes workbooks that a reader takes back cell for cell, with their layout."""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree

import openpyxl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ms_fmk_transplt.reports import spreadsheet, xlsx
from ms_fmk_transplt.reports.spreadsheet import Workbook, column_letter


def _read(data: bytes) -> openpyxl.Workbook:
    return openpyxl.load_workbook(io.BytesIO(data))


def test_cells_read_back_with_their_types_and_the_layout() -> None:
    book = Workbook()
    rows = [
        ("train.py", 12, "=SUM(A1:A2)", None, True, "  spaced  ", "a & b < c > d", 3.5),
        ("ünïcode ✓.py", 0, "", False, "line\nbreak", "tab\there", "x" * 200, -1),
    ]
    book.add_sheet("Issues", ["File", "Line", "Text", "None", "Flag", "Spaces", "Markup", "Number"], rows)
    read = _read(book.close())
    sheet = read["Issues"]
    values = [list(row) for row in sheet.iter_rows(values_only=True)]
    assert values[0] == ["File", "Line", "Text", "None", "Flag", "Spaces", "Markup", "Number"]
    assert values[1] == ["train.py", 12, "=SUM(A1:A2)", None, "yes", "  spaced  ", "a & b < c > d", 3.5]
    assert values[2] == ["ünïcode ✓.py", 0, None, None, "line\nbreak", "tab\there", "x" * 200, -1]
    assert sheet["C2"].data_type == "s"  # a string that looks like a formula stays a string
    assert sheet["A1"].font.b and not sheet["A2"].font.b
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == "A1:H3"
    assert sheet.column_dimensions["G"].width == spreadsheet.MAX_WIDTH  # capped
    assert sheet.column_dimensions["A"].width == len("ünïcode ✓.py") + 2


def test_characters_xml_cannot_hold_are_escaped_and_the_file_stays_well_formed() -> None:
    book = Workbook()
    book.add_sheet("S", ["Text"], [("form\x0cfeed and bell\x07",), ("_x0041_ literally",)])
    data = book.close()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            if name.endswith((".xml", ".rels")):
                ElementTree.fromstring(archive.read(name))  # every part parses
        sheet_xml = archive.read("xl/worksheets/sheet1.xml").decode()
    assert "_x000C_" in sheet_xml and "_x0007_" in sheet_xml
    assert "_x005F_x0041_" in sheet_xml  # the escape's own form, escaped so it reads back as written


def test_titles_the_format_refuses_are_made_valid() -> None:
    book = Workbook()
    book.add_sheet("a/b:c*d?[e]" + "x" * 40, ["H"], [])
    assert _read(book.close()).sheetnames == ["a_b_c_d__e_xxxxxxxxxxxxxxxxxxxx"]


def test_a_table_longer_than_a_sheet_continues_on_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spreadsheet, "MAX_ROWS", 4)
    monkeypatch.setattr(xlsx, "MAX_ROWS", 4)
    book = Workbook()
    rows = [(f"f{i}.py", i) for i in range(7)]
    xlsx._sheet(book, "Changes", ["File", "Line"], rows)
    read = _read(book.close())
    assert read.sheetnames == ["Changes", "Changes (2)", "Changes (3)"]
    cells = [r for name in read.sheetnames for r in read[name].iter_rows(min_row=2, values_only=True)]
    assert cells == rows
    assert xlsx._split_notes({"Changes": rows, "Short": rows[:2]}) == [
        ("sheet Changes", "7 rows, over one sheet's limit: split into 3 sheets")
    ]
    with pytest.raises(ValueError, match="over the format's 4"):
        Workbook().add_sheet("Big", ["File", "Line"], rows)


def test_column_letters() -> None:
    assert [column_letter(i) for i in (1, 26, 27, 52, 53, 702, 703)] == [
        "A",
        "Z",
        "AA",
        "AZ",
        "BA",
        "ZZ",
        "AAA",
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=30), st.integers(-(2**40), 2**40)), max_size=12))
def test_any_text_reads_back(rows: list[tuple[str, int]]) -> None:
    book = Workbook()
    book.add_sheet("S", ["Text", "Number"], rows)
    read = list(_read(book.close())["S"].iter_rows(min_row=2, max_row=len(rows) + 1, values_only=True))
    for (text, number), (got_text, got_number) in zip(rows, read):
        if spreadsheet._ILLEGAL.search(text):
            continue  # written as _xHHHH_ escapes, which Excel decodes and openpyxl does not
        assert (got_text or "") == text
        assert got_number == number


def test_no_cell_passes_excels_limit_and_the_summary_is_bounded(tmp_path) -> None:
    """35 files using one partial API and a CUDA-only library: the Check sheet's Files cell names
    30 and counts the rest, the Summary names the 20 files with the most issues and counts the
    others; a value longer than a cell's 32,767 characters is cut with a note."""
    from pathlib import Path

    from ms_fmk_transplt.run import Options, convert_project

    src = tmp_path / "src"
    src.mkdir()
    for i in range(35):
        extra = "import cupy\n" * (2 if i < 3 else 1)
        (src / f"m{i:02d}.py").write_text(
            f"import torch\nimport torch.nn.functional as F\n{extra}y = F.gelu(x)\n"
        )
    run = convert_project(Options(source=src, output=tmp_path / "out", use_cache=False))
    book = openpyxl.load_workbook(Path(run.output_root) / "unsupported_op.xlsx", read_only=True)
    check = [row for row in book["Check on NPU"].iter_rows(values_only=True)]
    files = next(row[4] for row in check if row[0] == "torch.nn.functional.gelu")
    assert files.startswith("m00.py, m01.py") and files.endswith(" and 5 more (report.json lists every one)")
    assert files.count(".py") == 30
    summary = {row[0]: row[1] for row in book["Summary"].iter_rows(values_only=True)}
    named = [item for item in summary if str(item).startswith("issues in m")]
    assert len(named) == 20 and named[:3] == ["issues in m00.py", "issues in m01.py", "issues in m02.py"]
    assert summary["issues in 15 other files"] == "see the log and report.json"
    # a cell longer than Excel allows is cut, with the note saying so
    long = xlsx._text("x" * 40000)
    assert len(long) == xlsx.CELL_LIMIT and long.endswith(xlsx.CUT)
    assert xlsx._text("x" * xlsx.CELL_LIMIT) == "x" * xlsx.CELL_LIMIT  # the twin: at the limit, kept
