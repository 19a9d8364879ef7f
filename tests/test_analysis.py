"""The analysis reports and the CI gate: analyse, JSON/CSV/SARIF, --fail-on, suppressions, baselines."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import openpyxl
import pytest
from click.testing import CliRunner

from ms_fmk_transplt.cli import EXIT_GATE, EXIT_USAGE, app

runner = CliRunner()
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0-rtm.5.json").read_text())

TRAIN = """\
import torch
import torch.nn as nn

x = torch.zeros(3).cuda()
y = torch.fft.fftshift(x)
z = torch.func.vmap(f)
model = nn.DataParallel(net)
"""


def _run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(TRAIN)
    (root / "clean.py").write_text("import torch\n\nx = torch.zeros(2)\n")
    return root


def _analyse(project: Path, *args: str):
    return _run("analyse", str(project), "-q", "--no-cache", "--no-xlsx", *args)


def test_analyse_writes_reports_and_no_converted_file(project: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in project.iterdir())
    result = _run("analyse", "-i", str(project), "-o", str(tmp_path / "reports"), "-q", "--no-cache")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["report.json", "unsupported_op.xlsx"]
    assert sorted(p.name for p in project.iterdir()) == before
    assert not list(tmp_path.rglob("*_msft"))


def test_json_csv_and_sarif_list_the_same_issues_at_the_original_positions(project: Path) -> None:
    as_json = json.loads(_analyse(project, "--report-format", "json").stdout)["issues"]
    as_csv = list(csv.DictReader(io.StringIO(_analyse(project, "--report-format", "csv").stdout)))
    sarif = json.loads(_analyse(project, "--report-format", "sarif").stdout)
    places = [(i["file"], i["line"], i["column"], i["rule"], i["api"]) for i in as_json]
    # x.cuda() becomes x.npu(): torch.Tensor.npu is classified (absent from the lists, the rule's
    # own target: counted), never torch.Tensor.cuda
    assert places == [
        ("train.py", 5, 5, "TP901", "torch.fft.fftshift"),
        ("train.py", 6, 5, "TP901", "torch.func.vmap"),
        ("train.py", 7, 9, "TP901", "torch.nn.DataParallel"),
    ]
    assert [(r["file"], int(r["line"]), int(r["column"]), r["rule"], r["api"]) for r in as_csv] == places
    results = sarif["runs"][0]["results"]
    assert [
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["locations"][0]["physicalLocation"]["region"]["startColumn"],
            r["ruleId"],
            r["properties"]["api"],
        )
        for r in results
    ] == places
    assert [i["status"] for i in as_json] == ["unsupported"] * 3


def test_sarif_is_valid_against_the_2_1_0_schema_with_rule_metadata(project: Path) -> None:
    (project / "train.py").write_text(TRAIN.replace("vmap(f)", "vmap(f)  # ms_fmk_transplt: ignore"))
    sarif = json.loads(_analyse(project, "--report-format", "sarif").stdout)
    jsonschema.validate(sarif, SCHEMA, cls=jsonschema.Draft4Validator)
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["TP901"]  # only the rules that have results
    assert "support list" in rules[0]["shortDescription"]["text"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file:///")
    suppressed = [r for r in run["results"] if "suppressions" in r]
    assert [r["properties"]["api"] for r in suppressed] == ["torch.func.vmap"]


def test_invalid_sarif_is_caught_by_the_schema() -> None:
    """The validation above can fail: a result without a message is not SARIF."""
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "TP1"}]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA, cls=jsonschema.Draft4Validator)


def test_gate_exit_codes(project: Path, tmp_path: Path) -> None:
    assert _analyse(project).exit_code == 0  # --fail-on none by default
    assert _analyse(project, "--fail-on", "unsupported").exit_code == EXIT_GATE
    assert _analyse(project, "--fail-on", "not-verified").exit_code == EXIT_GATE
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.py").write_text("import torch\n\nx = torch.zeros(2).cuda()\n")
    assert _analyse(clean, "--fail-on", "unsupported").exit_code == 0
    bad = _analyse(project, "--fail-on", "sometimes")
    assert bad.exit_code == EXIT_USAGE and "--fail-on sometimes" in bad.output


@pytest.mark.parametrize(
    "comment_line, passes",
    [
        ("y = torch.fft.fftshift(x)  # ms_fmk_transplt: ignore", True),
        ("y = torch.fft.fftshift(x)  # ms_fmk_transplt: ignore[TP901]", True),
        ("y = torch.fft.fftshift(x)  # ms_fmk_transplt: ignore[TP902, TP901]", True),
        ("y = torch.fft.fftshift(x)  # ms_fmk_transplt: ignore[TP902]", False),
        ("# ms_fmk_transplt: ignore[TP901]\ny = torch.fft.fftshift(x)", True),
        ("y = torch.fft.fftshift(x)  # ms_fmk_transplt ignore", False),
    ],
)
def test_inline_suppressions(tmp_path: Path, comment_line: str, passes: bool) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text(f"import torch\n\nx = torch.zeros(2)\n{comment_line}\n")
    result = _analyse(root, "--fail-on", "unsupported", "--report-format", "json")
    assert (result.exit_code == 0) is passes
    issues = json.loads(result.stdout)["issues"]
    assert len(issues) == 1 and issues[0]["suppressed"] is passes  # still reported, marked


def test_baseline_fails_only_on_new_issues_and_survives_moved_lines(project: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    assert _analyse(project, "--write-baseline", str(baseline)).exit_code == 0
    assert _analyse(project, "--fail-on", "unsupported", "--baseline", str(baseline)).exit_code == 0
    # an unrelated edit moves every line down: the baseline still matches
    (project / "train.py").write_text("# header\n\n\n" + TRAIN)
    assert _analyse(project, "--fail-on", "unsupported", "--baseline", str(baseline)).exit_code == 0
    # the same unsupported call added once more is new
    (project / "train.py").write_text(TRAIN + "w = torch.fft.fftshift(x)\n")
    result = _analyse(
        project, "--fail-on", "unsupported", "--baseline", str(baseline), "--report-format", "json"
    )
    assert result.exit_code == EXIT_GATE
    flags = [(i["line"], i["baselined"]) for i in json.loads(result.stdout)["issues"]]
    assert flags == [(5, True), (6, True), (7, True), (8, False)]


ENTRY = '"file": "a", "rule": "r", "api": "x", "fingerprint": "f"'


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", ":1:2: not a JSON baseline: Expecting property name enclosed in double quotes"),
        ('{"format": 99}', ": not an ms_fmk_transplt baseline (format 1; found 99)"),
        ('{"format": true}', ": not an ms_fmk_transplt baseline (format 1; found true)"),
        ('{"format": 1.0}', ": not an ms_fmk_transplt baseline (format 1; found 1.0)"),
        ('{"issues": []}', ": not an ms_fmk_transplt baseline (format 1; found no /format)"),
        ("[1]", ": not an ms_fmk_transplt baseline (format 1; found [1])"),
        ('{"format": NaN}', ": not a JSON baseline: NaN is not a JSON value"),
        ('{"format": 1, "issues": [], "format": 1}', ': /: key "format" given twice (JSON keeps only the last)'),
        ('{"format": 1, "issues": [{"file": "a.py"}]}', ': /issues/0: "rule" is required'),
        ('{"format": 1, "issues": 3}', ": /issues: 3 is not an array"),
        ('{"format": 1, "issues": {"a": 1}}', ': /issues: {"a": 1} is not an array'),
        ('{"format": 1, "issues": ["a.py"]}', ': /issues/0: "a.py" is not an object'),
        ('{"format": 1, "issues": [null]}', ": /issues/0: null is not an object"),
        ('{"format": 1, "issues": [{' + ENTRY + ', "count": 0}]}', ": /issues/0/count: 0 is less than the minimum of 1"),
        ('{"format": 1, "issues": [{' + ENTRY + ', "count": true}]}', ": /issues/0/count: true is not an integer"),
        ('{"format": 1, "issues": [{' + ENTRY + ', "count": 2.0}]}', ": /issues/0/count: 2.0 is not an integer (write 2)"),
        ('{"format": 1, "issues": [{"file": 1, "rule": "r", "api": "x", "fingerprint": "f"}]}', ": /issues/0/file: 1 is not a string"),
        ('{"format": 1, "issues": [{"file": "a", "rule": "r", "api": null, "fingerprint": "f"}]}', ": /issues/0/api: null is not a string"),
    ],
)  # fmt: skip
def test_a_bad_baseline_is_named_in_one_line(
    project: Path, tmp_path: Path, content: str, message: str
) -> None:
    baseline = tmp_path / "b.json"
    baseline.write_text(content)
    result = _analyse(project, "--baseline", str(baseline))
    assert result.exit_code == EXIT_USAGE
    assert result.stderr == f"error: {baseline}{message}\n"


def test_a_bad_baseline_is_read_past_a_bom_and_must_be_utf8(project: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "b.json"
    baseline.write_bytes(b'\xef\xbb\xbf{"format": 1, "issues": [null]}')
    result = _analyse(project, "--baseline", str(baseline))
    assert result.stderr == f"error: {baseline}: /issues/0: null is not an object\n"
    baseline.write_bytes(b'{"format": 1, \xff}')
    result = _analyse(project, "--baseline", str(baseline))
    assert result.stderr == f"error: {baseline}: not UTF-8 text (invalid start byte at byte 14)\n"


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["plain", "bom"])
def test_a_baseline_written_by_the_tool_or_saved_with_a_bom_is_used(
    project: Path, tmp_path: Path, bom: bytes
) -> None:
    baseline = tmp_path / "baseline.json"
    assert _analyse(project, "--write-baseline", str(baseline)).exit_code == 0
    baseline.write_bytes(bom + baseline.read_bytes())
    result = _analyse(project, "--fail-on", "unsupported", "--baseline", str(baseline))
    assert result.exit_code == 0 and result.stderr == ""


def test_an_unknown_baseline_key_is_a_warning(project: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    assert _analyse(project, "--write-baseline", str(baseline)).exit_code == 0
    document = json.loads(baseline.read_text())
    document["issues"][0]["cnt"] = 2
    baseline.write_text(json.dumps(document))
    result = _analyse(project, "--baseline", str(baseline))
    assert result.exit_code == 0
    assert result.stderr == (
        f"warning: {baseline}: /issues/0/cnt: unknown key ignored (did you mean count?) (valid: api, count, file, fingerprint, rule)\n"
    )


def test_a_bad_baseline_stops_a_conversion_before_anything_is_written(project: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "b.json"
    baseline.write_text("{not json")
    result = _run(
        "-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache", "--baseline", str(baseline)
    )
    assert result.exit_code == EXIT_USAGE
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option", ["--report", "--write-baseline"])
def test_a_report_into_a_missing_folder_makes_the_folder(project: Path, tmp_path: Path, option: str) -> None:
    target = tmp_path / "missing" / "deeper" / "r.json"
    result = _analyse(project, option, str(target))
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text())


@pytest.mark.parametrize("option", ["--report", "--write-baseline"])
@pytest.mark.parametrize("where", ["afile/r.json", "afile/sub/r.json", "adir.json"])
def test_a_report_that_cannot_be_written_is_a_usage_error_before_any_work(
    project: Path, tmp_path: Path, option: str, where: str
) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir.json").mkdir()
    target = tmp_path / where
    result = _run("analyse", str(project), "-o", str(tmp_path / "r"), "-q", "--no-cache", option, str(target))
    assert result.exit_code == EXIT_USAGE
    assert f"cannot write {target}: " in result.output.replace("\n", "")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "args", [["--report-format", "JSON"], ["--report-format", "Json"], ["--report", "R2.JSON"]]
)
def test_report_format_names_are_case_insensitive(project: Path, tmp_path: Path, args: list[str]) -> None:
    result = _analyse(project, *[a if a != "R2.JSON" else str(tmp_path / a) for a in args])
    assert result.exit_code == 0, result.output
    text = result.stdout if "--report-format" in args else (tmp_path / "R2.JSON").read_text()
    assert json.loads(text)["issues"]


def test_fail_on_levels_are_case_insensitive(project: Path) -> None:
    assert _analyse(project, "--fail-on", "UNSUPPORTED").exit_code == EXIT_GATE
    assert _analyse(project, "--fail-on", "None").exit_code == 0


def test_exclude_skips_analysis_and_copies_unchanged(project: Path, tmp_path: Path) -> None:
    (project / "tests").mkdir()
    (project / "tests" / "t.py").write_text("import torch\ny = torch.fft.fftshift(torch.zeros(2).cuda())\n")
    result = _analyse(project, "--exclude", "tests/*", "--exclude", "train.py", "--report-format", "json")
    assert json.loads(result.stdout)["issues"] == []
    out = tmp_path / "out"
    assert (
        _run("-i", str(project), "-o", str(out), "-q", "--no-cache", "--exclude", "**/tests/**").exit_code
        == 0
    )
    copied = out / "proj_msft" / "tests" / "t.py"
    assert copied.read_bytes() == (project / "tests" / "t.py").read_bytes()
    assert "npu" in (out / "proj_msft" / "train.py").read_text()


def test_exclude_takes_paths_spelled_from_the_current_folder(project: Path) -> None:
    (project / "tests").mkdir()
    (project / "tests" / "t.py").write_text("import torch\ny = torch.fft.fftshift(torch.zeros(2).cuda())\n")
    result = _analyse(project, "--exclude", "./tests/", "--exclude", "./train.py", "--report-format", "json")
    assert json.loads(result.stdout)["issues"] == []


def test_an_absolute_exclude_inside_the_input_matches(project: Path, tmp_path: Path, monkeypatch) -> None:
    (project / "tests").mkdir()
    (project / "tests" / "t.py").write_text("import torch\ny = torch.fft.fftshift(torch.zeros(2).cuda())\n")
    out = tmp_path / "out"
    args = ["-q", "--no-cache", "--exclude", str(project / "tests"), "--exclude", f"{project}/train.py"]
    assert _run("-i", str(project), "-o", str(out), *args).exit_code == 0
    assert (out / "proj_msft" / "tests" / "t.py").read_bytes() == (project / "tests" / "t.py").read_bytes()
    assert (out / "proj_msft" / "train.py").read_bytes() == (project / "train.py").read_bytes()
    assert json.loads(_analyse(project, *args[2:], "--report-format", "json").stdout)["issues"] == []
    monkeypatch.chdir(project.parent)  # several paths, named from the current folder
    several = _run("analyse", "proj/train.py", "proj/tests", "--no-xlsx", "--report-format", "json", *args)
    assert json.loads(several.stdout)["issues"] == []


def test_an_absolute_exclude_outside_the_input_is_a_warning(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    result = _analyse(project, "--exclude", str(elsewhere), "--report-format", "json")
    assert result.exit_code == 0
    assert result.stderr == f"warning: --exclude {elsewhere}: outside {project}, matches nothing\n"
    assert json.loads(result.stdout)["issues"] != []


def test_diff_prints_the_changes_and_writes_nothing(project: Path, tmp_path: Path) -> None:
    result = _run("-i", str(project), "--diff", "-q", "--no-cache")
    assert result.exit_code == 0
    assert "--- a/train.py\n+++ b/train.py\n" in result.stdout
    assert "-x = torch.zeros(3).cuda()\n+x = torch.zeros(3).npu()\n" in result.stdout
    assert "clean.py" not in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proj"]


def test_diff_of_a_file_without_a_final_newline_applies(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import torch\nx = torch.cuda.is_available()")
    result = _run("-i", str(source), "--diff", "-q", "--no-cache")
    assert result.exit_code == 0
    assert result.stdout.endswith("+x = torch.npu.is_available()\n\\ No newline at end of file\n")
    assert "-x = torch.cuda.is_available()\n\\ No newline at end of file\n" in result.stdout


def test_one_file_given_twice_is_analysed_once_with_a_relative_name(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project.parent)
    result = _run("analyse", str(project / "train.py"), "./proj/train.py", "proj", "-q", "--no-cache",
                  "--no-xlsx", "--report-format", "json")  # fmt: skip
    assert result.exit_code == 0
    files = [i["file"] for i in json.loads(result.stdout)["issues"]]
    assert files and set(files) == {"proj/train.py"}
    assert len(files) == len(
        set((i["file"], i["line"], i["rule"]) for i in json.loads(result.stdout)["issues"])
    )


def test_a_tree_baseline_matches_a_hook_that_passes_one_file(
    project: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(project.parent)
    baseline = tmp_path / "baseline.json"
    assert (
        _run("analyse", ".", "-q", "--no-cache", "--no-xlsx", "--write-baseline", str(baseline)).exit_code
        == 0
    )
    hook = (
        "analyse",
        "-q",
        "--no-cache",
        "--no-xlsx",
        "--fail-on",
        "unsupported",
        "--baseline",
        str(baseline),
    )
    assert _run(*hook, "proj/train.py").exit_code == 0
    assert _run(*hook, "proj/train.py", "proj/clean.py").exit_code == 0
    (project / "clean.py").write_text("import torch\ny = torch.fft.fftshift(x)\n")
    assert _run(*hook, "proj/clean.py").exit_code == EXIT_GATE


def test_a_failed_gate_names_each_issue_even_when_quiet(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("m.py").write_text("import torch\n\ndef f():\n    torch.cuda.nvtx.range_push('[x]')\n")
    result = _run("analyse", "m.py", "-q", "--no-cache", "--no-xlsx", "--fail-on", "unsupported")
    assert result.exit_code == EXIT_GATE
    assert "m.py:4:5: unsupported [TP603] torch.cuda.nvtx" in result.stderr
    assert "gate: 1 issue(s)" in result.stderr


def test_analyse_takes_several_files_as_a_pre_commit_hook_passes_them(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project.parent)
    result = _run("analyse", "proj/train.py", "proj/clean.py", "-q", "--no-cache", "--no-xlsx",
                  "--report-format", "json", "--fail-on", "unsupported")  # fmt: skip
    assert result.exit_code == EXIT_GATE
    assert {i["file"] for i in json.loads(result.stdout)["issues"]} == {"proj/train.py"}


def test_xlsx_has_status_columns_filters_and_never_a_formula(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    hostile = '=HYPERLINK("http://evil","x")'
    (root / "a.py").write_text(
        f"import torch\ny = torch.fft.fftshift(x)\nz = torch.fft.fftshift  # {hostile}\n"
    )
    (root / "=cmd.py").write_text("import torch\ny = torch.fft.fftshift(x)\n")
    assert _run("analyse", str(root), "-o", str(tmp_path / "r"), "-q", "--no-cache").exit_code == 0
    book = openpyxl.load_workbook(tmp_path / "r" / "unsupported_op.xlsx")
    assert book.sheetnames == ["Summary", "Unsupported", "Check on NPU", "Changes"]
    sheet = book["Unsupported"]
    header = [c.value for c in sheet[1]]
    assert header[:9] == ["File", "Line", "Column", "API", "Status", "What to do", "Decided by", "Rule",
                          "Heuristic"]  # fmt: skip
    assert sheet.freeze_panes == "A2" and sheet.auto_filter.ref
    cells = [c for sheet in book for row in sheet.iter_rows() for c in row]
    assert not [c.coordinate for c in cells if c.data_type == "f"]
    assert "=cmd.py" in [c.value for c in sheet["A"]]
    summary = dict(book["Summary"].iter_rows(values_only=True))
    assert summary["issues unsupported"] == 3 and summary["release"] == "Ascend data for PyTorch 2.13.0"


def test_classification_follows_the_selected_release(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text("import torch\nprogram = torch.export.export(model, args)\n")
    new = json.loads(_analyse(root, "--report-format", "json").stdout)["issues"]
    old = json.loads(_analyse(root, "-v", "2.1.0", "--report-format", "json").stdout)["issues"]
    assert [i["api"] for i in new] == ["torch.export.export"] and old == []


def test_a_trailing_ignore_covers_its_own_line_only(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text(
        "import torch\nz = torch.func.vmap(f)  # ms_fmk_transplt: ignore\ny = torch.fft.fftshift(x)\n"
    )
    issues = json.loads(_analyse(root, "--report-format", "json").stdout)["issues"]
    assert [(i["line"], i["suppressed"]) for i in issues] == [(2, True), (3, False)]


def test_the_pre_commit_hook_runs_analyse_on_the_files_it_is_given(project: Path, monkeypatch) -> None:
    hooks = (Path(__file__).parent.parent / ".pre-commit-hooks.yaml").read_text()
    entry = next(
        line.split(":", 1)[1].split() for line in hooks.splitlines() if line.strip().startswith("entry:")
    )
    assert entry[:2] == ["ms_fmk_transplt", "analyse"]
    monkeypatch.chdir(project)
    assert _run(*entry[1:], "--no-cache", "clean.py").exit_code == 0
    assert _run(*entry[1:], "--no-cache", "clean.py", "train.py").exit_code == EXIT_GATE


def test_gate_levels_of_the_new_statuses(tmp_path: Path) -> None:
    """A no-effect knob is reported and never fails the gate (the line runs, as before); a dtype
    outside a partial API's list fails where partial does (it was a partial finding before)."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text("import torch\ntorch.backends.cudnn.benchmark = True\n")
    (root / "b.py").write_text("import torch\nc = torch.matmul(x.double(), y)\n")
    result = _analyse(root, "--fail-on", "unsupported", "--report-format", "json")
    assert result.exit_code == 0
    statuses = [(i["file"], i["status"], i["source"]) for i in json.loads(result.stdout)["issues"]]
    assert statuses == [
        ("a.py", "no-effect", "rule TP701"),
        ("b.py", "unsupported-dtype", "PyTorch 2.13.0 support list, dtype in the code"),
        ("b.py", "partial", "PyTorch 2.13.0 support list"),  # x.double(): Tensor.double is partial
    ]
    failed = _analyse(root, "--fail-on", "partial")
    assert failed.exit_code == EXIT_GATE
    assert "b.py:2:5: unsupported-dtype [TP901]" in failed.output and "a.py" not in failed.output
    assert _analyse(root, "--fail-on", "not-verified").exit_code == EXIT_GATE
    # both can be baselined; the baseline keeps the no-effect knob too
    baseline = tmp_path / "baseline.json"
    assert _analyse(root, "--write-baseline", str(baseline)).exit_code == 0
    assert len(json.loads(baseline.read_text())["issues"]) == 3
    assert _analyse(root, "--fail-on", "not-verified", "--baseline", str(baseline)).exit_code == 0


def test_sarif_levels_follow_what_will_not_run(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text(
        "import torch\ntorch.backends.cudnn.benchmark = True\nc = torch.matmul(x.double(), y)\n"
        "d = torch.matmul(x, y)\ne = torch.jit.load(p, map_location='cpu')\ns = x.to_sparse()\n"
    )
    sarif = json.loads(_analyse(root, "--report-format", "sarif", "--sarif-level", "note").stdout)
    jsonschema.validate(sarif, SCHEMA, cls=jsonschema.Draft4Validator)
    levels = [(r["properties"]["status"], r["level"]) for r in sarif["runs"][0]["results"]]
    assert levels == [
        ("no-effect", "warning"),
        ("unsupported-dtype", "warning"),
        ("partial", "note"),  # x.double()
        ("partial", "note"),
        ("not-verified", "note"),
        ("unsupported", "error"),
    ]
    # by default the notes (what to check) are left out: code scanning shows every result as an alert
    default = json.loads(_analyse(root, "--report-format", "sarif").stdout)
    assert [r["level"] for r in default["runs"][0]["results"]] == ["warning", "warning", "error"]
    errors = json.loads(_analyse(root, "--report-format", "sarif", "--sarif-level", "ERROR").stdout)
    assert [r["level"] for r in errors["runs"][0]["results"]] == ["error"]
    assert len(errors["runs"][0]["tool"]["driver"]["rules"]) == 1  # the rules of the results kept


def test_sarif_paths_are_relative_to_the_repository_root(tmp_path: Path, monkeypatch) -> None:
    """GitHub ignores originalUriBaseIds: a subfolder analysed from anywhere names files from the
    git top level, so alerts land on the right path; with no repository, from the analysed folder."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "src" / "pkg" / "a.py").write_text("import torch\nimport cupy\n")
    for cwd, target in ((tmp_path, repo / "src"), (repo / "src" / "pkg", Path("a.py")), (repo, Path("src"))):
        monkeypatch.chdir(cwd)
        done = subprocess.run(
            [sys.executable, "-m", "ms_fmk_transplt", "analyse", str(target), "--no-xlsx", "-q",
             "--report-format", "sarif", "--no-cache"],
            capture_output=True, text=True,
        )  # fmt: skip
        run = json.loads(done.stdout)["runs"][0]
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]}
        assert uris == {"src/pkg/a.py"}, (cwd, target)
        assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.as_uri() + "/"
    # the twin: no repository above, paths stay relative to the analysed folder
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "b.py").write_text("import cupy\n")
    monkeypatch.chdir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "analyse", "plain", "--no-xlsx", "-q", "--report-format", "sarif"],
        capture_output=True, text=True,
    )  # fmt: skip
    run = json.loads(done.stdout)["runs"][0]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]} == {
        "b.py"
    }


def _runtime_report(path: Path) -> Path:
    """A report as runtime_shim/diagnostics/opcheck.py writes it (its JSON layout)."""
    ops = [
        {"op": "addmm", "count": 12, "supported": True, "status": "supported", "unsupported_dtypes": "",
         "first_call_site": "train.py:9"},
        {"op": "_fft_r2c", "count": 2, "supported": False, "status": "unsupported", "unsupported_dtypes": "",
         "first_call_site": "train.py:5"},
    ]  # fmt: skip
    path.write_text(
        json.dumps({"release": {"torch": "2.12.0"}, "run": "r", "pid": 1, "pids": [1], "ops": ops})
    )
    return path


def test_a_runtime_report_is_merged_into_the_workbook(project: Path, tmp_path: Path) -> None:
    report = _runtime_report(tmp_path / "ops.json")
    out = tmp_path / "r"
    result = _run(
        "analyse", str(project), "-o", str(out), "-q", "--no-cache", "--runtime-report", str(report)
    )
    assert result.exit_code == 0, result.output
    book = openpyxl.load_workbook(out / "unsupported_op.xlsx")
    assert book.sheetnames == ["Summary", "Unsupported", "Check on NPU", "Changes", "Runtime ops"]
    rows = list(book["Runtime ops"].iter_rows(values_only=True))
    assert rows == [
        ("Op", "Calls", "Status", "Unsupported dtypes", "First call site"),
        ("addmm", 12, "supported", None, "train.py:9"),
        ("_fft_r2c", 2, "unsupported", None, "train.py:5"),
    ]
    summary = dict(book["Summary"].iter_rows(values_only=True))
    assert summary["ops the simulated NPU ran"].startswith("2 ops, 1 unsupported")
    # the same from the CSV form
    csv_report = tmp_path / "ops.csv"
    csv_report.write_text(
        "op,count,supported,status,unsupported_dtypes,first_call_site\naddmm,3,True,supported,,a.py:1\n"
    )
    assert _run("analyse", str(project), "-o", str(out), "-q", "--no-cache", "--runtime-report",
                str(csv_report)).exit_code == 0  # fmt: skip
    book = openpyxl.load_workbook(out / "unsupported_op.xlsx")
    assert [r[0] for r in book["Runtime ops"].iter_rows(values_only=True)] == ["Op", "addmm"]
    # as a spreadsheet saves it: a BOM, CRLF, columns in another order, a quoted call site, a blank line
    csv_report.write_bytes(
        b'\xef\xbb\xbfstatus,op,count,first_call_site\r\nunsupported,_fft_r2c,2,"a.py:1, in f"\r\n\r\n'
    )
    assert _run("analyse", str(project), "-o", str(out), "-q", "--no-cache", "--runtime-report",
                str(csv_report)).exit_code == 0  # fmt: skip
    book = openpyxl.load_workbook(out / "unsupported_op.xlsx")
    assert list(book["Runtime ops"].iter_rows(values_only=True))[1] == (
        "_fft_r2c",
        2,
        "unsupported",
        None,
        "a.py:1, in f",
    )
    # a run that sent no op to the device: the sheet says so, it does not vanish
    csv_report.write_text("op,count,supported,status,unsupported_dtypes,first_call_site\n")
    assert _run("analyse", str(project), "-o", str(out), "-q", "--no-cache", "--runtime-report",
                str(csv_report)).exit_code == 0  # fmt: skip
    book = openpyxl.load_workbook(out / "unsupported_op.xlsx")
    assert [r[0] for r in book["Runtime ops"].iter_rows(values_only=True)] == ["Op"]
    assert dict(book["Summary"].iter_rows(values_only=True))["ops the simulated NPU ran"].startswith(
        "0 ops, 0"
    )


def test_the_runtime_report_format_is_the_runtimes(tmp_path: Path) -> None:
    import ast

    from ms_fmk_transplt.reports.runtime import FIELDS

    source = (Path(__file__).parent.parent / "runtime_shim" / "diagnostics" / "opcheck.py").read_text()
    (fields,) = [
        ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["_FIELDS"]
    ]
    assert fields == FIELDS


_CSV_HEADER = "op,count,supported,status,unsupported_dtypes,first_call_site\n"


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("ops.json", "{nope", "not a JSON runtime report"),
        ("ops.json", '{"ops": 3}', "/ops: a runtime report lists its ops under /ops"),
        ("ops.json", '{"ops": [{"count": 1}]}', "/ops/0: needs an op name"),
        ("ops.json", '{"ops": [7]}', "/ops/0: not an object"),
        ("ops.json", '{"ops": [{"op": "add", "count": "many", "status": "supported"}]}',
         '/ops/0/count: not a count (0 or more): "many"'),
        ("ops.json", '{"ops": [{"op": "add", "count": 2.5, "status": "supported"}]}',
         "/ops/0/count: not a count (0 or more): 2.5"),
        ("ops.json", '{"ops": [{"op": "add", "count": true, "status": "supported"}]}',
         "/ops/0/count: not a count (0 or more): true"),
        ("ops.json", '{"ops": [{"op": "add", "count": -1, "status": "supported"}]}',
         "/ops/0/count: not a count (0 or more): -1"),
        ("ops.json", '{"ops": [{"op": "add", "count": 1, "status": null}]}',
         "/ops/0/status: null is not one of supported, unsupported, unsupported_dtype, backend_internal"),
        # CSV: the columns first, then each row's values
        ("ops.csv", "a,b\n", "row 1: no column op, count, status; a runtime report's columns: op, count, "
         "supported, status, unsupported_dtypes, first_call_site"),
        ("ops.csv", "a,b\n1,2\n", "row 1: no column op, count, status"),
        ("ops.csv", "op,count\nadd,1\n", "row 1: no column status"),
        ("ops.csv", "", "row 1: no header"),
        ("ops.csv", _CSV_HEADER + "add,1,True,supported,,a.py:1\nmul,x,True,supported,,\n",
         'row 3, column count: not a count (0 or more): "x"'),
        ("ops.csv", _CSV_HEADER + "add,1,True,fine,,\n",
         'row 2, column status: "fine" is not one of supported, unsupported, unsupported_dtype, backend_internal'),
        ("ops.csv", _CSV_HEADER + ",1,True,supported,,\n", "row 2: needs an op name"),
        ("ops.csv", _CSV_HEADER + "add,1,True,supported\n", "row 2: 4 values for 6 columns"),
    ],
)  # fmt: skip
def test_a_bad_runtime_report_stops_the_run_before_any_work(
    project: Path, tmp_path: Path, name: str, content: str, message: str
) -> None:
    report = tmp_path / name
    report.write_text(content)
    result = _run("analyse", str(project), "-o", str(tmp_path / "r"), "-q", "--no-cache", "--runtime-report",
                  str(report))  # fmt: skip
    assert result.exit_code == EXIT_USAGE
    assert f"{report}: {message}" in " ".join(result.output.split())
    assert not (tmp_path / "r").exists()


def _findings_report(path: Path, findings: list) -> Path:
    path.write_text(
        json.dumps({"runtime_findings": {"version": 1, "run": "r", "pids": [1], "findings": findings}})
    )
    return path


_FINDINGS = [
    {"kind": "amp_disabled", "what": "torch GradScaler('cuda') disabled", "dependency_site": "deps/lib/amp.py:5",
     "dependency_path": "/x/deps/lib/amp.py:5", "user_site": "train.py:8", "count": 3, "shapes": []},
    {"kind": "dynamic_shapes", "what": "aten::mm", "dependency_site": None, "dependency_path": None,
     "user_site": "train.py:30", "count": 4, "shapes": ["[2, 5] x [5, 4]", "[2, 6] x [6, 4]"],
     "distinct_shapes": 2},
]  # fmt: skip


def test_a_runtime_findings_report_is_merged_as_its_own_sheet(project: Path, tmp_path: Path) -> None:
    report = _findings_report(tmp_path / "findings.json", _FINDINGS)
    out = tmp_path / "r"
    result = _run(
        "analyse", str(project), "-o", str(out), "-q", "--no-cache", "--runtime-report", str(report)
    )
    assert result.exit_code == 0, result.output
    book = openpyxl.load_workbook(out / "unsupported_op.xlsx")
    assert book.sheetnames == ["Summary", "Unsupported", "Check on NPU", "Changes", "Runtime findings"]
    assert list(book["Runtime findings"].iter_rows(values_only=True)) == [
        ("Kind", "What", "Dependency site", "User site", "Count", "Shapes"),
        ("amp_disabled", "torch GradScaler('cuda') disabled", "deps/lib/amp.py:5", "train.py:8", 3, None),
        ("dynamic_shapes", "aten::mm", None, "train.py:30", 4, "[2, 5] x [5, 4] / [2, 6] x [6, 4]"),
    ]
    summary = dict(book["Summary"].iter_rows(values_only=True))
    assert summary["runtime findings"].startswith(
        "2 findings (amp_disabled, dynamic_shapes) (sheet Runtime findings"
    )
    # a run that found nothing: the sheet is there, empty
    _findings_report(report, [])
    assert _run("analyse", str(project), "-o", str(out), "-q", "--no-cache", "--runtime-report",
                str(report)).exit_code == 0  # fmt: skip
    book = openpyxl.load_workbook(out / "unsupported_op.xlsx")
    assert [r[0] for r in book["Runtime findings"].iter_rows(values_only=True)] == ["Kind"]
    assert "Runtime ops" not in book.sheetnames


def test_the_findings_report_format_is_the_runtimes() -> None:
    """The converter and verify read what runtime_shim/diagnostics/findings.py writes (never imported)."""
    import ast

    from ms_fmk_transplt.reports.runtime import FINDING_KINDS, FINDINGS_KEY
    from ms_fmk_transplt.verify import runtime_findings

    source = (Path(__file__).parent.parent / "runtime_shim" / "diagnostics" / "findings.py").read_text()
    values = {
        target.id: ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value, (ast.Constant, ast.Tuple))
    }
    assert values["TOP_KEY"] == FINDINGS_KEY == runtime_findings.TOP_KEY
    assert values["KINDS"] == FINDING_KINDS == tuple(runtime_findings.LABELS)
    assert values["ENV_REPORT"] == runtime_findings.ENV_REPORT
    assert values["ENV_PROJECT"] == runtime_findings.ENV_PROJECT


_GOOD = {"kind": "nccl", "what": "init_process_group(backend='nccl')", "count": 1}


@pytest.mark.parametrize(
    "document, message",
    [
        ({"runtime_findings": []}, "/runtime_findings/findings: a findings report lists its findings under"),
        ({"runtime_findings": {"findings": [3]}}, "/runtime_findings/findings/0: not an object"),
        ({"runtime_findings": {"findings": [_GOOD, {**_GOOD, "kind": "gpu"}]}},
         '/runtime_findings/findings/1/kind: "gpu" is not one of cuda_call, cuda_device, amp_disabled, nccl, '
         "dynamic_shapes"),
        ({"runtime_findings": {"findings": [{**_GOOD, "what": ""}]}},
         "/runtime_findings/findings/0/what: needs a text saying what was found"),
        ({"runtime_findings": {"findings": [{**_GOOD, "count": "2"}]}},
         '/runtime_findings/findings/0/count: not a count (0 or more): "2"'),
        ({"runtime_findings": {"findings": [{**_GOOD, "user_site": 12}]}},
         "/runtime_findings/findings/0/user_site: not a file:line text or null: 12"),
        ({"runtime_findings": {"findings": [{**_GOOD, "shapes": "[1]"}]}},
         '/runtime_findings/findings/0/shapes: not a list of texts: "[1]"'),
    ],
)  # fmt: skip
def test_a_bad_runtime_findings_report_stops_the_run_before_any_work(
    project: Path, tmp_path: Path, document: dict, message: str
) -> None:
    report = tmp_path / "findings.json"
    report.write_text(json.dumps(document))
    result = _run("analyse", str(project), "-o", str(tmp_path / "r"), "-q", "--no-cache", "--runtime-report",
                  str(report))  # fmt: skip
    assert result.exit_code == EXIT_USAGE
    assert f"{report}: {message}" in " ".join(result.output.split())
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_the_console_table_leads_with_what_will_not_run_and_says_where_the_reports_are(
    project: Path, tmp_path: Path
) -> None:
    sarif = tmp_path / "issues.sarif"
    result = _run("analyse", str(project), "-o", str(tmp_path / "r"), "--no-cache", "--report", str(sarif))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    order = [text.find(s) for s in ("unsupported APIs", "3 APIs in 3 places", "files with the most",
                                    "3 in train.py", "to check on the NPU", "files converted")]  # fmt: skip
    assert -1 not in order and order == sorted(order), text
    folded = "".join(c for c in result.output if not c.isspace() and c != "│")  # long cells wrap
    assert f"issues(sarif){sarif}" in folded and f"reportsin{tmp_path / 'r'}" in folded


def _gone_after_analysis(monkeypatch, spoil) -> None:
    """Make `spoil()` run between the analysis and the diff, as a user's edit or a checkout might."""
    import ms_fmk_transplt.run as run_module

    analyse = run_module.analyse_project

    def then_spoil(*args, **kwargs):
        result = analyse(*args, **kwargs)
        spoil()
        return result

    monkeypatch.setattr(run_module, "analyse_project", then_spoil)


@pytest.mark.parametrize("how", ["deleted", "a_folder"])
def test_diff_names_a_source_gone_since_it_was_converted(project: Path, monkeypatch, how: str) -> None:
    train = project / "train.py"

    def spoil() -> None:
        train.unlink()
        if how == "a_folder":
            train.mkdir()

    _gone_after_analysis(monkeypatch, spoil)
    (project / "other.py").write_text("import torch\nn = torch.cuda.device_count()\n")
    result = _run("-i", str(project), "--diff", "-q", "--no-cache")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "--- a/other.py\n" in result.stdout and "a/train.py" not in result.stdout
    [line] = [line for line in result.stderr.splitlines() if "train.py" in line]
    assert line.startswith("skipped: train.py: cannot read file for the diff (")


def test_diff_names_a_single_file_input_gone_since_it_was_converted(tmp_path: Path, monkeypatch) -> None:
    source = tmp_path / "m.py"
    source.write_text("import torch\nx = torch.cuda.is_available()\n")
    _gone_after_analysis(monkeypatch, source.unlink)
    result = _run("-i", str(source), "--diff", "-q", "--no-cache")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.strip() == "skipped: m.py: cannot read file for the diff (No such file or directory)"


def test_diff_of_sources_left_in_place_exits_0(project: Path, monkeypatch) -> None:
    _gone_after_analysis(monkeypatch, lambda: None)
    result = _run("-i", str(project), "--diff", "-q", "--no-cache")
    assert result.exit_code == 0 and result.stderr == ""
    assert "--- a/train.py\n" in result.stdout
