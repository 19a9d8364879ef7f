"""The operator-check CSV opens safely in a spreadsheet: a cell that would be read as a formula
(=, +, -, @, a tab, a carriage return first) is written as text, and reads back as it was, both
when the processes of one run merge their rows and when the converter merges the report."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ms_fmk_transplt.reports import csv_cells as converter_cells
from ms_fmk_transplt.reports.runtime import load_runtime_report
from runtime_shim.diagnostics import csv_cells, opcheck

SITES = ['=HYPERLINK("http://x")_train.py:3', "+1.py:2", "-m.py:1", "@SUM(A1).py:4", "\tt.py:5", "\rr.py:6"]
PLAIN = ["train.py:3", "'quoted.py:1", "a=b.py:2", ""]


def _row(op: str, site: str, count: int = 1) -> dict:
    return {
        "op": op,
        "count": count,
        "supported": False,
        "status": "unsupported",
        "unsupported_dtypes": "",
        "first_call_site": site,
    }


@pytest.fixture
def checker(monkeypatch, tmp_path: Path):
    monkeypatch.delenv(opcheck.RUN_ENV, raising=False)
    made = opcheck.OpChecker(opcheck.load_release(), "off", str(tmp_path / "ops.csv"))
    rows = [_row(f"op{i}", site) for i, site in enumerate(SITES + PLAIN)]
    monkeypatch.setattr(made, "rows", lambda: [dict(row) for row in rows])
    return made


def _cells(report: Path) -> dict[str, str]:
    with report.open(encoding="utf-8", newline="") as fh:
        return {row["op"]: row["first_call_site"] for row in csv.DictReader(fh)}


def test_formula_cells_are_written_as_text_and_others_as_they_are(checker, tmp_path: Path) -> None:
    report = checker.write_report()
    written = _cells(report)
    assert [written[f"op{i}"] for i in range(len(SITES))] == ["'" + site for site in SITES]
    assert [written[f"op{len(SITES) + i}"] for i in range(len(PLAIN))] == PLAIN
    with report.open(encoding="utf-8", newline="") as fh:
        assert [row["count"] for row in csv.DictReader(fh)] == ["1"] * len(SITES + PLAIN)


def test_the_processes_of_one_run_merge_the_cells_as_they_were(checker, tmp_path: Path) -> None:
    checker.write_report()
    report = checker.write_report()  # a second process of the run: reads the first one's rows
    rows = opcheck._rows_of_run(report, checker.run)
    assert {row["op"]: row["first_call_site"] for row in rows} == {
        f"op{i}": site for i, site in enumerate(SITES + PLAIN)
    }
    assert {row["count"] for row in rows} == {2}
    assert _cells(report)["op0"] == "'" + SITES[0]  # quoted once, not once more per merge


def test_the_converter_reads_the_report_as_the_runtime_saw_it(checker) -> None:
    ops = load_runtime_report(checker.write_report())
    assert [op.first_call_site for op in ops] == SITES + PLAIN


def test_the_runtime_and_the_converter_quote_alike() -> None:
    assert csv_cells.FORMULA_STARTS == converter_cells.FORMULA_STARTS
    for value in [*SITES, *PLAIN, 3, -1, 2.5, True, None]:
        assert csv_cells.cell(value) == converter_cells.cell(value)
    for value in [*SITES, *PLAIN]:
        assert csv_cells.plain(csv_cells.cell(value)) == value
        assert converter_cells.plain(converter_cells.cell(value)) == value
