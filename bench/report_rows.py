"""Row counts of the analysis reports on a corpus: per xlsx sheet, per status, per format.

Usage (from the repository root):
    .venv/bin/python bench/report_rows.py CORPUS [CORPUS ...] [-v RELEASE]

Runs `ms_fmk_transplt analyse` on each corpus into a temporary folder with
`--report-format json/csv/sarif`, then prints, per corpus: the rows of every sheet of
unsupported_op.xlsx, the findings per status in the JSON report, and the row counts of the
CSV and SARIF reports (which must equal the JSON's).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _analyse(corpus: Path, out: Path, release: str | None, fmt: str) -> Path:
    report = out / f"issues.{fmt}"
    command = [
        sys.executable,
        "-m",
        "ms_fmk_transplt",
        "analyse",
        str(corpus),
        "-o",
        str(out),
        "-q",
        "--no-cache",
        "--report-format",
        fmt,
        "--report",
        str(report),
    ]
    if release:
        command += ["-v", release]
    if fmt == "sarif":  # every level, so its results count as the JSON's issues do
        command += ["--sarif-level", "note"]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=False, cwd=ROOT)
    return report


def main() -> None:
    """Print the counts for each corpus named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+", type=Path)
    parser.add_argument("-v", "--version", dest="release")
    args = parser.parse_args()
    import openpyxl

    for corpus in args.corpora:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            reports = {fmt: _analyse(corpus, out, args.release, fmt) for fmt in ("json", "csv", "sarif")}
            book = openpyxl.load_workbook(out / "unsupported_op.xlsx", read_only=True)
            print(f"## {corpus}")
            for sheet in book.worksheets:
                rows = sum(1 for _ in sheet.iter_rows(min_row=2, values_only=True))
                print(f"sheet {sheet.title}: {rows} rows")
            issues = json.loads(reports["json"].read_text())["issues"]
            print(
                f"json: {len(issues)} findings, by status {dict(sorted(Counter(i['status'] for i in issues).items()))}"
            )
            with reports["csv"].open(newline="") as handle:
                print(f"csv: {sum(1 for _ in csv.DictReader(handle))} rows")
            sarif = json.loads(reports["sarif"].read_text())
            print(f"sarif: {len(sarif['runs'][0]['results'])} results")


if __name__ == "__main__":
    main()
