"""What the CLI prints: the user's text as written (never rich markup or emoji codes), the lines
that explain a failed run even with -q, and a notice when an input holds no Python file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.cli import EXIT_FAILED_FILES, EXIT_GATE, EXIT_UNSUPPORTED, EXIT_USAGE, app

# names rich would read as markup (`[bold]`, `[/bold]`: a MarkupError) or emoji codes (`:100:`)
NAMES = ["c[bold]d", "e:100:", "s:smile:", "q[/bold]", "[red]r[/red]", "plain"]
SYNTAX = "syntax error at line 1: invalid syntax"
FFT = "torch.fft.fftshift is unsupported on Ascend (PyTorch 2.13.0 support list)"


def _run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _on_line_100(path: Path, comment: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("import torch\n" + "x = 1\n" * 98 + f"y = torch.fft.fftshift(x){comment}\n")


@pytest.mark.parametrize("name", NAMES)
def test_a_failed_file_is_named_as_it_is(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src" / name).mkdir(parents=True)
    (tmp_path / "src" / f"{name}.py").write_text("def f(:\n")
    (tmp_path / "src" / name / "x.py").write_text("def f(:\n")
    expected = [f"failed: {name}.py: {SYNTAX}", f"failed: {name}/x.py: {SYNTAX}"]
    for quiet in ([], ["-q"]):
        for args in (
            ["-i", "src", "-o", "out", "--force", *quiet],
            ["analyse", "src", "--no-xlsx", "--no-cache", *quiet],
            ["-i", "src", "--diff", *quiet],
        ):
            result = _run(*args)
            assert result.exit_code == EXIT_FAILED_FILES, (args, result.output)
            assert [line for line in result.stderr.splitlines() if line.startswith("failed:")] == sorted(
                expected
            ), args


@pytest.mark.parametrize("name", NAMES)
def test_a_gate_finding_reads_path_line_column(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`train.py:100:5` (`:100:` is an emoji code) and a message with markup in it, as written."""
    monkeypatch.chdir(tmp_path)
    _on_line_100(tmp_path / "src" / name / f"t{name}.py", "  # [bold] :smile: [/bold]")
    where = f"{name}/t{name}.py:100:5: unsupported [TP901] {FFT}"
    for args in (
        ["-i", "src", "-o", "out", "--force", "-q", "--fail-on", "unsupported"],
        ["analyse", "src", "--no-xlsx", "--no-cache", "-q", "--fail-on", "unsupported"],
        ["analyse", "src", "--no-xlsx", "--no-cache", "--fail-on", "unsupported"],
    ):
        result = _run(*args)
        assert result.exit_code == EXIT_GATE, (args, result.output)
        lines = result.stderr.splitlines()
        assert any(line.startswith(where) for line in lines), (args, lines)
        assert "gate: 1 issue(s) at or above --fail-on unsupported" in lines


def test_the_summary_names_the_input_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _on_line_100(tmp_path / "a[bold]:100:" / "t[x]:smile:.py")
    result = _run("-i", "a[bold]:100:", "-o", "out")
    assert result.exit_code == 0, result.output
    assert "ms_fmk_transplt: a[bold]:100:" in result.stderr
    for row in ("files with the most", "1 in t[x]:smile:.py", "out/a[bold]:100:_msft", "files unchanged"):
        assert row in result.stderr, row
    assert "[dim]" not in result.stderr  # the tool's own styling is styling, not text


def test_error_and_warning_lines_keep_the_users_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    missing = _run("-i", "nope[/bold]:100:", "-o", "out")
    assert missing.exit_code == EXIT_USAGE
    assert missing.stderr == "error: input not found: nope[/bold]:100:\n"
    (tmp_path / "x[/bold]:smile:").mkdir(parents=True)
    empty = _run("analyse", "x[/bold]:smile:", "--no-xlsx")
    assert empty.exit_code == 0
    assert "warning: no Python files found in x[/bold]:smile:" in empty.stderr.splitlines()
    _on_line_100(tmp_path / "p" / "t.py")
    distributed = _run("-i", "p", "-o", "out", "distributed", "-m", "m[/bold]:100:.py")
    assert distributed.exit_code == EXIT_USAGE
    assert distributed.stderr == "error: -m m[/bold]:100:.py: no such script inside p\n"
    verify = _run("verify", "python", "v[/bold]:100:.py")
    assert verify.exit_code == EXIT_USAGE
    assert verify.stderr == "error: script not found: v[/bold]:100:.py\n"
    bad = _run("explain", "w[/bold]:100:.py:abc")
    assert bad.exit_code == EXIT_USAGE and bad.stderr == "error: w[/bold]:100:.py:abc: no such file\n"


def test_rules_list_prints_a_user_summary_as_written(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    summary = "rename [bold]f[/bold] :smile: [/red]"
    rules.write_text(
        json.dumps(
            {
                "rules": {
                    "FuncNameModifyRule": [
                        {"old_name": "f", "new_name": "g", "id": "U001", "summary": summary}
                    ]
                }
            }
        )
    )
    result = _run("rules", "list", "-r", str(rules))
    assert result.exit_code == 0, result.output
    assert summary in result.stdout


def test_the_qa_report_through_python_m(tmp_path: Path) -> None:
    """The reported commands, as a user runs them: `py:100:5`, not `py💯5`; no MarkupError."""
    _on_line_100(tmp_path / "ex" / "tensor_parallel_example.py")
    (tmp_path / "mk2" / "q[/bold]").mkdir(parents=True)
    (tmp_path / "mk2" / "q[/bold]" / "bad.py").write_text("def f(:\n")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "ms_fmk_transplt", *args]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, encoding="utf-8")

    gate = run("-i", "ex", "-o", "fo", "-q", "--fail-on", "unsupported")
    assert gate.returncode == EXIT_GATE
    assert gate.stderr.startswith("tensor_parallel_example.py:100:5: unsupported [TP901]")
    failed = run("-i", "mk2", "-o", "mk2out")
    assert failed.returncode == EXIT_FAILED_FILES and "Traceback" not in failed.stderr
    assert f"failed: q[/bold]/bad.py: {SYNTAX}" in failed.stderr.splitlines()


def test_quiet_still_says_why_a_run_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-q drops the progress bar and the table; the lines behind a non-zero exit stay."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "syn.py").write_text("def f(:\n")
    for args in (
        ["-i", "bad/syn.py", "-o", "x", "-q"],
        ["analyse", "bad", "--no-xlsx", "-q"],
        ["-i", "bad", "--diff", "-q"],
    ):
        result = _run(*args)
        assert result.exit_code == EXIT_FAILED_FILES
        assert result.stderr == f"failed: syn.py: {SYNTAX}\n", args
    _on_line_100(tmp_path / "u" / "t.py")
    strict = _run("-i", "u", "-o", "x", "-q", "--strict")
    assert strict.exit_code == EXIT_UNSUPPORTED
    assert strict.stderr == "strict: 1 use(s) of APIs Ascend does not support in 1 file(s)\n"
    # the twin: a quiet run that succeeds prints nothing
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "t.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    for args in (
        ["-i", "ok", "-o", "x", "-q"],
        ["analyse", "ok", "--no-xlsx", "-q"],
        ["-i", "ok", "--diff", "-q"],
    ):
        result = _run(*args)
        assert result.exit_code == 0 and result.stderr == "", args


def test_the_progress_bar_shows_a_path_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bar's description is the file in hand: `[/bold]` in it once stopped the run."""
    from ms_fmk_transplt.cli import PROGRESS_MIN_FILES

    monkeypatch.chdir(tmp_path)
    (tmp_path / "src" / "d[").mkdir(parents=True)
    for i in range(PROGRESS_MIN_FILES + 1):
        (tmp_path / "src" / "d[" / f"bold]:100:{i}.py").write_text(f"x = {i}\n")
    for args in (["-i", "src", "-o", "out", "--no-cache"], ["analyse", "src", "--no-xlsx", "--no-cache"]):
        result = _run(*args)
        assert result.exit_code == 0, (args, result.output)
        assert f"files unchanged                    │ {PROGRESS_MIN_FILES + 1}" in result.stderr
