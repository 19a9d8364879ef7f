"""A machine report sent to stdout (`--report -`, `--write-baseline -`) is all stdout holds: the
human report, the summary and the warnings go to stderr, and two documents never share stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.cli import EXIT_USAGE, app
from ms_fmk_transplt.verify import launch
from ms_fmk_transplt.verify.session import Outcome
from ms_fmk_transplt.verify.step_records import read_records
from ms_fmk_transplt.verify.verdict import SideResult, judge

TRAIN = "import torch\n\nx = torch.zeros(3).cuda()\ny = torch.fft.fftshift(x)\n"


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _outcome(tmp_path: Path) -> Outcome:
    """A verification that found the two runs identical at one step."""
    records = {}
    for side in ("cpu", "npu"):
        folder = tmp_path / side
        folder.mkdir()
        step = {
            "step": 1,
            "rank": 0,
            "optimizer": 0,
            "losses": [0.5],
            "params": [["w", [1], "float32", "aa"]],
        }
        end = {"end": "limit", "steps": 1, "memory": {}}
        (folder / "rank0.pid1.jsonl").write_text(json.dumps(step) + "\n" + json.dumps(end) + "\n")
        records[side] = read_records(folder)
    outputs = {
        side: launch.RunOutput(
            side, ("python", "t.py"), 0, False, 0.1, tmp_path / "o", tmp_path / "e", tmp_path
        )
        for side in ("cpu", "npu")
    }
    verdict = judge(SideResult(0, records["cpu"]), SideResult(0, records["npu"]), [])
    return Outcome(
        verdict, Path("t.py"), Path("out/t.py"), outputs["cpu"], outputs["npu"],
        records["cpu"], records["npu"], [], (), None,
    )  # fmt: skip


@pytest.fixture
def fake_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    import ms_fmk_transplt.verify as verify_package

    outcome = _outcome(tmp_path)
    assert outcome.verdict.exit_code == 0, outcome.verdict.message
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("")
    monkeypatch.setattr(verify_package, "verify", lambda request, say: outcome)
    return outcome


@pytest.mark.parametrize("quiet", [[], ["-q"]], ids=["full", "quiet"])
def test_verify_report_to_stdout_is_the_json_alone(fake_verify: Outcome, quiet: list[str]) -> None:
    done = _invoke("verify", *quiet, "--report", "-", "--", "python", "t.py")
    assert done.exit_code == 0
    document = json.loads(done.stdout)
    assert document["status"] == "identical" and document["exit_code"] == 0
    assert "result: identical" in done.stderr
    if not quiet:
        assert done.stderr.rstrip().endswith("exit 0")


def test_verify_text_report_stays_on_stdout_without_report_dash(fake_verify: Outcome, tmp_path: Path) -> None:
    done = _invoke("verify", "--report", str(tmp_path / "v.json"), "--", "python", "t.py")
    assert done.exit_code == 0
    assert done.stdout.startswith("verify t.py") and done.stdout.rstrip().endswith("exit 0")
    assert json.loads((tmp_path / "v.json").read_text())["status"] == "identical"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(TRAIN)
    return root


@pytest.mark.parametrize("command", ["convert", "analyse"])
def test_a_baseline_to_stdout_is_the_json_alone(project: Path, tmp_path: Path, command: str) -> None:
    if command == "convert":
        args = ["-i", str(project), "-o", str(tmp_path / "out"), "--no-cache"]
    else:
        args = ["analyse", str(project), "--no-cache", "--no-xlsx"]
    done = _invoke(*args, "--write-baseline", "-")
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document["format"] == 1 and document["issues"]
    assert not (Path.cwd() / "-").exists() and not (tmp_path / "-").exists()
    assert "ms_fmk_transplt:" in done.stderr  # the summary table, on stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--diff", "--report", "-", "--report-format", "json"], "--diff prints the diff to stdout"),
        (["--diff", "--report-format", "sarif"], "--diff prints the diff to stdout"),
        (["--diff", "--write-baseline", "-"], "--diff prints the diff to stdout"),
        (
            ["-o", "{out}", "--report", "-", "--report-format", "json", "--write-baseline", "-"],
            "--report - and --write-baseline - both write to stdout",
        ),
    ],
)
def test_two_documents_never_share_stdout(
    project: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    args = [a.format(out=tmp_path / "out") for a in args]
    done = _invoke("-i", str(project), "--no-cache", *args)
    assert done.exit_code == EXIT_USAGE
    assert message in " ".join(done.stderr.split())
    assert done.stdout == "" and not (tmp_path / "out").exists()


def test_the_diff_alone_and_a_report_to_stdout_alone_still_work(project: Path, tmp_path: Path) -> None:
    diff = _invoke("-i", str(project), "--no-cache", "--diff", "-q")
    assert diff.exit_code == 0 and diff.stdout.startswith("--- a/train.py")
    report = _invoke("-i", str(project), "-o", str(tmp_path / "out"), "--no-cache", "--report-format", "json")
    assert report.exit_code == 0 and json.loads(report.stdout)["issues"]
