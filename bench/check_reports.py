#!/usr/bin/env python3
"""Are a run's reports complete and valid? Reads every report of an output folder back and checks
that they agree with each other.

* report.json parses; its per-operation finding totals equal the findings listed per file, and
  its file totals the files listed;
* change_list.csv parses as CSV and has one row per finding of report.json;
* msFmkTranspltlog.txt ends with the totals of report.json;
* unsupported_op.xlsx is an intact zip, every sheet reads back with openpyxl (read-only), and
  the Summary sheet is first.

Used by bench/bench_scale.py (``--validate``) on large trees, where a report cut short or a row
limit overrun would not show in a timing.

    .venv/bin/python bench/check_reports.py OUT/<name>_msft
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import zipfile
from collections import Counter
from pathlib import Path

csv.field_size_limit(1 << 30)


def check(folder: Path) -> tuple[list[str], str]:
    """(problems, one-line summary) for the reports in `folder`."""
    problems: list[str] = []
    document = json.loads((folder / "report.json").read_bytes())
    totals = document["totals"]
    operations: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    for entry in document["files"]:
        statuses[entry["status"]] += 1
        for finding in entry["findings"]:
            operations[finding["operation"].lower()] += 1
    findings = sum(operations.values())
    for name, value in totals.items():
        if name.startswith("findings_") and operations[name.removeprefix("findings_")] != value:
            problems.append(f"report.json: {name} is {value}, files list {operations[name[9:]]}")
    for status in ("converted", "unchanged", "copied"):
        if totals.get(f"files_{status}", 0) != statuses[status]:
            problems.append(
                f"report.json: files_{status} is {totals.get(f'files_{status}')}, listed {statuses[status]}"
            )
    with open(folder / "change_list.csv", newline="", encoding="utf-8") as handle:
        rows = sum(1 for _ in csv.reader(handle)) - 1
    if rows != findings:
        problems.append(f"change_list.csv: {rows} rows, report.json lists {findings} findings")
    log = (folder / "msFmkTranspltlog.txt").read_text(encoding="utf-8").splitlines()
    tail = dict(line.split(": ", 1) for line in log[-len(totals) - 1 :] if ": " in line)
    for name, value in totals.items():
        if tail.get(name) != str(value):
            problems.append(f"msFmkTranspltlog.txt: {name} is {tail.get(name)!r}, report.json {value}")
    sheets = _xlsx_rows(folder / "unsupported_op.xlsx", problems)
    summary = (
        f"{len(document['files']):,} files, {findings:,} findings; csv {rows:,} rows; log {len(log):,} lines; "
        f"xlsx " + ", ".join(f"{title} {count:,}" for title, count in sheets)
    )
    return problems, summary


def _xlsx_rows(path: Path, problems: list[str]) -> list[tuple[str, int]]:
    import openpyxl

    with zipfile.ZipFile(path) as archive:
        broken = archive.testzip()
        if broken:
            problems.append(f"{path.name}: member {broken} is corrupt")
            return []
    workbook = openpyxl.load_workbook(path, read_only=True)
    try:
        sheets = [(sheet.title, sum(1 for _ in sheet.iter_rows(values_only=True))) for sheet in workbook]
    finally:
        workbook.close()
    if not sheets or sheets[0][0] != "Summary":
        problems.append(f"{path.name}: the first sheet is {sheets[0][0] if sheets else None!r}, not Summary")
    return sheets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="the converted folder (OUT/<name>_msft)")
    args = parser.parse_args(argv)
    problems, summary = check(args.folder)
    print(summary)
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
