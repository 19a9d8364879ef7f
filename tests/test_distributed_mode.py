"""`ms_fmk_transplt distributed`: the transform on fixture pairs, the run and the command line.

tests/fixtures/distributed/<case>.in.py becomes <case>.out.py with the findings in
<case>.findings; a case without .out.py must not change. A first line `# args: -t NAME` passes
the target model. Every output, distributed again, does not change (it is distributed already).
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.cli import app
from ms_fmk_transplt.distributed import distribute_source
from ms_fmk_transplt.distributed.lines import line_map
from ms_fmk_transplt.records import Finding

FIXTURES = Path(__file__).parent / "fixtures" / "distributed"
CASES = sorted(FIXTURES.glob("*.in.py"))


def _findings(findings: tuple[Finding, ...]) -> str:
    lines = []
    for f in findings:
        span = f"{f.start_line}" if f.start_line == f.end_line else f"{f.start_line}-{f.end_line}"
        lines.append(f"{span} {f.operation.value} {f.rule_id} {f.message}\n")
    return "".join(lines)


def _model(source: str) -> str | None:
    first = source.splitlines()[0] if source else ""
    return first.split("-t", 1)[1].strip() if first.startswith("# args: -t") else None


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name[: -len(".in.py")])
def test_distributed_fixture(case: Path, update_fixtures: bool) -> None:
    source = case.read_text()
    out_file = case.with_name(case.name.replace(".in.py", ".out.py"))
    findings_file = case.with_name(case.name.replace(".in.py", ".findings"))
    result = distribute_source(source, case.name, _model(source))
    output = result.output if result.output is not None else source
    if update_fixtures:
        if result.output is not None or out_file.exists():
            out_file.write_text(output)
        findings_file.write_text(_findings(result.findings))
    assert output == (out_file.read_text() if out_file.exists() else source)
    assert _findings(result.findings) == findings_file.read_text()
    compile(output, case.name, "exec")
    again = distribute_source(output, case.name, _model(source))
    assert again.output is None, "distributing the output again changed it"


def test_every_rewrite_has_a_must_not_change_case() -> None:
    unchanged = [c for c in CASES if not c.with_name(c.name.replace(".in.py", ".out.py")).exists()]
    assert CASES and len(unchanged) >= 2


def test_line_map_names_the_original_line_of_each_rewritten_line() -> None:
    before = "a\nb\nc\n"
    after = "a\nnew 1\nnew 2\nb\nC\n"
    assert line_map(before, after)[:5] == [1, 1, 1, 2, 3]


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text((FIXTURES / "function_loaders.in.py").read_text())
    (project / "util.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    return project


def test_cli_writes_msft_multi_with_the_launcher_and_original_lines(tmp_path: Path) -> None:
    project = _project(tmp_path)
    before = {p.name: p.read_bytes() for p in project.iterdir()}
    done = CliRunner().invoke(
        app,
        [
            "-i",
            str(project),
            "-o",
            str(tmp_path / "out"),
            "-q",
            "--no-cache",
            "distributed",
            "-m",
            "train.py",
        ],
    )
    assert done.exit_code == 0, done.output
    out = tmp_path / "out" / "proj_msft_multi"
    train = (out / "train.py").read_text()
    assert 'torch.distributed.init_process_group("hccl" if torch.npu.is_available() else "gloo")' in train
    assert "torch.npu.set_device(LOCAL_RANK)" in train and "import torch_npu" in train
    assert "DistributedDataParallel(model)" in train
    assert (out / "util.py").read_text().count(".npu()") == 1  # the ordinary conversion everywhere
    launcher = out / "run_distributed_npu.sh"
    assert launcher.stat().st_mode & stat.S_IXUSR
    assert "torchrun" in launcher.read_text() and "train.py" in launcher.read_text()
    rows = (out / "change_list.csv").read_text().splitlines()
    original = (project / "train.py").read_text().splitlines()
    # every finding names a line of the original file; the set-up follows the last import (line 7)
    assert "train.py,7,7,INSERT" in "\n".join(rows)
    assert all(1 <= int(r.split(",")[1]) <= len(original) for r in rows[1:])
    assert any(",DS002" in r for r in rows) and any(",TP101" in r for r in rows)
    assert {p.name: p.read_bytes() for p in project.iterdir()} == before  # the input is untouched


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["distributed", "-m", "train.py"], "give -i/--input and -o/--output"),
        (["-i", "{p}", "-o", "{o}", "distributed"], "give the main script of the project with -m MAIN"),
        (["-i", "{p}", "-o", "{o}", "distributed", "-m", "nope.py"], "-m nope.py: no such script inside"),
        (
            ["-i", "{p}", "-o", "{o}", "distributed", "-m", "broken.py"],
            "broken.py: cannot be parsed: line 1:",
        ),
    ],
)
def test_cli_usage_errors_name_the_problem(tmp_path: Path, args: list[str], message: str) -> None:
    project = _project(tmp_path)
    (project / "broken.py").write_text("def f(:\n")
    args = [a.format(p=project, o=tmp_path / "out") for a in args]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2
    assert message in " ".join(done.output.split())
    assert not (tmp_path / "out").exists()


def test_an_excluded_main_script_is_copied_unchanged(tmp_path: Path) -> None:
    project = _project(tmp_path)
    args = ["-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache", "--exclude", "train.py"]
    done = CliRunner().invoke(app, [*args, "distributed", "-m", "train.py"])
    assert done.exit_code == 0, done.output
    out = tmp_path / "out" / "proj_msft_multi"
    assert (out / "train.py").read_bytes() == (project / "train.py").read_bytes()
    assert ",DS0" not in (out / "change_list.csv").read_text()


def _every_finding_is_in_every_report(out: Path) -> set[str]:
    """Each finding of report.json is in change_list.csv, in the log and on its sheet of the xlsx;
    the rule ids seen."""
    import csv

    import openpyxl

    document = json.loads((out / "report.json").read_text())
    rows = list(csv.DictReader((out / "change_list.csv").open()))
    log = (out / "msFmkTranspltlog.txt").read_text()
    book = openpyxl.load_workbook(out / "unsupported_op.xlsx", read_only=True)
    sheets = {name: list(book[name].iter_rows(min_row=2, values_only=True)) for name in book.sheetnames}
    seen = set()
    for entry in document["files"]:
        path = entry["path"]
        for f in entry["findings"]:
            start, end, rule = f["start_line"], f["end_line"], f["rule"]
            seen.add(rule)
            where = f"{path}:{start if start == end else f'{start}-{end}'} [{rule}]"
            assert where in log, where
            csv_row = {"File": path, "Start Line": str(start), "End Line": str(end), "Rule": rule}
            assert any(csv_row.items() <= row.items() for row in rows), where
            if f["operation"] in ("INSERT", "MODIFY", "DELETE"):
                assert (path, start, end, f["operation"], rule) in {r[:5] for r in sheets["Changes"]}, where
            elif "status" not in f:
                assert (path, start, end, rule, f["message"]) in {r[:5] for r in sheets["Notes"]}, where
            elif f["status"] in ("unsupported", "unsupported-dtype", "no-effect"):
                lines = {(r[0], int(n), r[7]) for r in sheets["Unsupported"] for n in str(r[12]).split(", ")}
                assert (path, start, rule) in lines, where
            else:
                assert any(r[8] == rule and path in r[4].split(", ") for r in sheets["Check on NPU"]), where
    return seen


@pytest.mark.parametrize("mode", ["distributed", "ordinary"])
def test_every_finding_is_in_the_log_the_csv_the_xlsx_and_report_json(tmp_path: Path, mode: str) -> None:
    sample = Path(__file__).parent.parent / "sample_models" / "mnist_mlp"
    args = ["-i", str(sample), "-o", str(tmp_path / "out"), "-q", "--no-cache"]
    done = CliRunner().invoke(
        app, [*args, *(["distributed", "-m", "main.py"] if mode == "distributed" else [])]
    )
    assert done.exit_code == 0, done.output
    out = tmp_path / "out" / ("mnist_mlp_msft_multi" if mode == "distributed" else "mnist_mlp_msft")
    seen = _every_finding_is_in_every_report(out)
    notes = {"DS104", "DS105", "DS106", "DS113"}
    assert notes <= seen if mode == "distributed" else not any(r.startswith("DS") for r in seen)


TARGETS = """\
import torch
import torch.nn as nn


class Encoder(nn.Module):
    pass


class Small(Encoder):
    pass


encoder = Small()
head = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
n = len(encoder.state_dict())
"""


def test_a_target_the_script_does_not_assign_names_the_models_found() -> None:
    from ms_fmk_transplt.distributed.target import TargetModelError

    with pytest.raises(TargetModelError) as caught:
        distribute_source(TARGETS, "train.py", "model")
    assert (caught.value.name, caught.value.candidates) == ("model", ["head", "encoder"])
    with pytest.raises(TargetModelError) as caught:
        distribute_source("import torch\nx = 1\n", "train.py", "net")
    assert caught.value.candidates == []
    wrapped = distribute_source(TARGETS, "train.py", "encoder")  # any assigned variable is taken
    assert "encoder = torch.nn.parallel.DistributedDataParallel(encoder)" in (wrapped.output or "")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nomodel", "error: -t nomodel: train.py assigns no variable nomodel (models found: model)"),
        ("Net", "error: -t Net: train.py assigns no variable Net (models found: model)"),
    ],
)
def test_cli_a_target_that_is_no_variable_is_a_usage_error(tmp_path: Path, target: str, message: str) -> None:
    project = _project(tmp_path)
    args = ["-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache"]
    done = CliRunner().invoke(app, [*args, "distributed", "-m", "train.py", "-t", target])
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines() == [message]
    assert not (tmp_path / "out").exists()


def test_cli_no_model_found_is_a_note_in_every_report(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text((FIXTURES / "no_model.in.py").read_text())
    args = ["-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache"]
    done = CliRunner().invoke(app, [*args, "distributed", "-m", "train.py"])
    assert done.exit_code == 0, done.output
    out = tmp_path / "out" / "proj_msft_multi"
    assert "DS101" in _every_finding_is_in_every_report(out)
    assert (
        "train.py:2 [DS101] NOTE no model found: nothing is wrapped in DistributedDataParallel"
        in (out / "msFmkTranspltlog.txt").read_text()
    )
