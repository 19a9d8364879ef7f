"""Every report lists the same findings with the same statuses: the log, the xlsx (Unsupported per
use, Check on NPU per API), report.json, and the issues as JSON, CSV and SARIF; read back from the
bytes each writer produced, on the fixtures, on sample_models and (slow, when present) on
pytorch/examples. No row names an API the tool rewrote."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import Counter
from pathlib import Path

import jsonschema
import openpyxl
import pytest

from ms_fmk_transplt import analysis
from ms_fmk_transplt.records import RunResult
from ms_fmk_transplt.reports.findings import FORMATS, repository_root
from ms_fmk_transplt.run import LOG_NAME, Options, convert_project

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0-rtm.5.json").read_text())
# where the benches keep pytorch/examples (bench/README.md); PYTORCH_EXAMPLES points elsewhere
EXAMPLES = Path(os.environ.get("PYTORCH_EXAMPLES", "/tmp/pytorch_examples"))
_LOG_LINE = re.compile(r"^(.+?):(\d+)(?:-\d+)? \[(\w+)\] (\S+) ")
_BLOCKING = ("unsupported", "unsupported-dtype", "no-effect")

Key = tuple[str, int, str, str]  # file, line, rule, status


def _from_log(text: str) -> Counter[Key]:
    found: Counter[Key] = Counter()
    section = ""
    for line in text.splitlines():
        if line.startswith("== "):
            section = line
            continue
        if line and ("will not run" in section or "to check on the NPU" in section):
            match = _LOG_LINE.match(line)
            assert match, line
            found[(match[1], int(match[2]), match[3], match[4].lower())] += 1
    return found


def _from_issues(run: RunResult, found: list) -> dict[str, Counter[Key]]:
    as_json = json.loads(FORMATS["json"](run, found))["issues"]
    as_csv = list(csv.DictReader(io.StringIO(FORMATS["csv"](run, found).decode())))
    sarif = json.loads(FORMATS["sarif"](run, found))
    jsonschema.validate(sarif, SCHEMA, cls=jsonschema.Draft4Validator)
    results = sarif["runs"][0]["results"]
    # SARIF names files from the repository's top (code scanning's paths), the others from the input
    root = Path(run.input_root).resolve()
    inside = root.relative_to(repository_root(root)).as_posix()
    prefix = "" if inside == "." else f"{inside}/"
    return {
        "json": Counter((i["file"], i["line"], i["rule"], i["status"]) for i in as_json),
        "csv": Counter((r["file"], int(r["line"]), r["rule"], r["status"]) for r in as_csv),
        "sarif": Counter(
            (
                r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].removeprefix(prefix),
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
                r["ruleId"],
                r["properties"]["status"],
            )
            for r in results
        ),
    }


def _compare_every_format(source: Path, tmp_path: Path) -> RunResult:
    run = convert_project(Options(source=source, output=tmp_path, use_cache=False))
    out = Path(run.output_root)
    found = analysis.issues(run)
    formats = _from_issues(run, found)
    formats["log"] = _from_log((out / LOG_NAME).read_text())
    summary = json.loads((out / "report.json").read_text())
    formats["report.json"] = Counter(
        (f["path"], finding["start_line"], finding["rule"], finding["status"])
        for f in summary["files"]
        for finding in f["findings"]
        if "status" in finding
    )
    book = openpyxl.load_workbook(out / "unsupported_op.xlsx", read_only=True)
    left = analysis.notes(run)  # notes (an NPU twin kept, the distributed mode's DS1xx) have their sheet
    assert book.sheetnames == ["Summary", "Unsupported", "Check on NPU", "Changes"] + (
        ["Notes"] if left else []
    )
    if left:
        assert sum(1 for _ in book["Notes"].iter_rows(min_row=2)) == len(left)
    rows = list(book["Unsupported"].iter_rows(min_row=2, values_only=True))
    # one row per cause in a file: its uses' lines in the last column, their count before it
    unsupported = Counter((r[0], int(line), r[7], r[4]) for r in rows for line in r[12].split(", "))
    assert all(len(r[12].split(", ")) == r[11] and int(r[12].split(", ")[0]) == r[1] for r in rows)
    assert len({(r[0], r[7], r[4], r[3], r[9], r[10]) for r in rows}) == len(rows), "one row per cause"
    per_api = {(r[0], r[1]): r[3] for r in book["Check on NPU"].iter_rows(min_row=2, values_only=True)}
    expected = formats["json"]
    for name, keys in formats.items():
        assert keys == expected, f"{name} lists other findings than the JSON report"
    assert unsupported == Counter({k: n for k, n in expected.items() if k[3] in _BLOCKING})
    # sorted by file and line: what will not run reads top to bottom
    assert [(r[0], r[1]) for r in rows] == sorted((r[0], r[1]) for r in rows)
    checks = Counter(
        (i.finding.api or i.finding.message, i.status.value) for i in found if not i.status.blocks
    )
    assert per_api == dict(checks), "Check on NPU: one row per API, its uses counted"
    # an API has two rows only where a rule gives some of its uses a status of their own
    # (torch.jit.load: not verified by the list; partial where TP120 finds no map_location)
    two = {api for api, _ in per_api if sum(a == api for a, _ in per_api) > 1}
    assert all(any(i.finding.api == api and i.finding.rule_id != "TP901" for i in found) for api in two)
    _no_row_names_a_rewritten_api(run, found)
    return run


_RENAMED = re.compile(r"^\.?([\w.]+)(?:\(\.\.\.\))? -> ")


def _no_row_names_a_rewritten_api(run: RunResult, found: list) -> None:
    """Per file, the APIs a MODIFY finding rewrote (`torch.cuda.X -> ...`, `.cuda(...) -> ...`)
    are named by no issue of that file."""
    for result in run.files:
        rewritten = set()
        for f in result.findings:
            match = _RENAMED.match(f.message) if f.operation.value == "MODIFY" else None
            if match:
                old = match[1]
                rewritten.add(old if "." in old else f"torch.Tensor.{old}")
        named = {i.finding.api for i in found if i.path == result.path}
        assert not rewritten & named, f"{result.path}: rewritten yet reported {rewritten & named}"


def test_every_format_lists_the_same_findings_on_the_fixtures(tmp_path: Path) -> None:
    run = _compare_every_format(ROOT / "tests" / "fixtures" / "rules", tmp_path)
    statuses = {i.status.value for i in analysis.issues(run)}
    assert statuses >= {"unsupported", "unsupported-dtype", "no-effect", "partial", "not-verified"}


def test_every_format_lists_the_same_findings_on_sample_models(tmp_path: Path) -> None:
    run = _compare_every_format(ROOT / "sample_models", tmp_path)
    assert analysis.issues(run)


@pytest.mark.slow
@pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"pytorch/examples is not at {EXAMPLES}")
def test_every_format_lists_the_same_findings_on_pytorch_examples(tmp_path: Path) -> None:
    run = _compare_every_format(EXAMPLES, tmp_path)
    found = analysis.issues(run)
    assert "torch.Tensor.cuda" not in {i.finding.api for i in found}
    blocking = [i for i in found if i.status.blocks]
    assert 0 < len(blocking) < 100, "the Unsupported sheet holds only what will not run"
    generic = [
        i.finding.api for i in blocking if i.finding.suggestion.startswith("run it on the CPU (.cpu() in")
    ]
    assert not generic, "advice specific to the API, from the rules"


def test_report_json_is_one_line_per_file_and_parses_whole() -> None:
    import json

    from ms_fmk_transplt.records import FileResult, Finding, Operation, RunResult, Status
    from ms_fmk_transplt.reports.text import summary_json

    finding = Finding("TP101", Operation.MODIFY, 3, 3, 'torch.cuda -> torch.npu "quoted"\n', column=5)
    files = (
        FileResult("a.py", Status.CONVERTED, findings=(finding,), output=b"x"),
        FileResult("b.bin", Status.COPIED),
        FileResult("c.py", Status.FAILED, reason="syntax error at line 1: invalid syntax"),
    )
    for run in (
        RunResult("in", "out", files, release="2.12.0"),
        RunResult("in", "out", (), release="2.12.0"),
    ):
        text = summary_json(run).decode()
        document = json.loads(text)
        assert [f["path"] for f in document["files"]] == [r.path for r in run.files]
        assert document["release"] == "2.12.0" and "totals" in document
        lines = text.splitlines()
        assert sum(line.startswith('{"path":') for line in lines) == len(run.files)
    assert document["files"] == []
    first = json.loads(summary_json(RunResult("in", "out", files)).decode())["files"]
    assert first[0]["findings"][0]["message"] == finding.message and first[2]["reason"].startswith("syntax")


def test_no_csv_cell_is_a_spreadsheet_formula(tmp_path: Path) -> None:
    """A file name or message starting with = + - @ is written with a leading quote in every CSV
    (the xlsx keeps every cell text by itself); other cells and numbers are written as they are."""
    src = tmp_path / "p"
    src.mkdir()
    code = "import torch\nimport mylib\nx = torch.zeros(2).cuda()\ny = torch.fft.fftshift(x)\nmylib.f()\n"
    names = ["=cmd.py", "+a.py", "-b.py", "@c.py", "plain.py"]
    for name in names:
        (src / name).write_text(code)
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps({"rules": {"FuncNameModifyRule": [
            {"old_name": "mylib.f", "new_name": "mylib.g", "message": "=HYPERLINK(\"http://x\") {old}"}
        ]}})
    )  # fmt: skip
    run = convert_project(Options(src, tmp_path / "out", rule_files=[rules], use_cache=False))
    change_list = list(csv.reader(io.StringIO((Path(run.output_root) / "change_list.csv").read_text())))
    issues = list(csv.reader(io.StringIO(FORMATS["csv"](run, analysis.issues(run)).decode())))
    for rows in (change_list, issues):
        files = {row[0] for row in rows[1:]}
        assert files == {"'=cmd.py", "'+a.py", "'-b.py", "'@c.py", "plain.py"}, files
        for row in rows[1:]:
            assert not any(c.startswith(("=", "+", "-", "@")) for c in row), row
            assert all(c.isdigit() for c in row[1:3])  # lines stay numbers
    assert '\'=HYPERLINK("http://x") mylib.f' in {row[4] for row in change_list}
    plain = [row[4] for row in change_list if row[0] == "plain.py" and "HYPERLINK" not in row[4]]
    assert plain and not any(m.startswith("'") for m in plain)  # nothing else is quoted
