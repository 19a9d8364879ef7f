"""An output folder or report file that cannot be made or written is one line, `error: cannot
write ...: <reason>`, exit 2, and nothing is left behind: no staging folder, no folder the run
made, no report."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt import pipeline
from ms_fmk_transplt.cli import app

CODE = "import torch\nx = torch.zeros(1).cuda()\n"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ex").mkdir()
    (tmp_path / "ex" / "good.py").write_text(CODE)
    (tmp_path / "ex" / "notes.txt").write_text("notes\n")
    (tmp_path / "blocker").write_text("a file, where a folder is wanted\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def _run(*args: str):
    return CliRunner().invoke(app, [*args], catch_exceptions=False)


COMMANDS = {
    "convert": lambda out: ["-i", "ex", "-o", out, "-q", "--no-cache"],
    "analyse": lambda out: ["analyse", "ex", "-o", out, "-q", "--no-cache"],
    "distributed": lambda out: ["-i", "ex", "-o", out, "-q", "--no-cache", "distributed", "-m", "good.py"],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("out", ["blocker/out", "blocker/out/deeper"])
def test_an_output_folder_that_cannot_be_made(workdir: Path, command: str, out: str) -> None:
    before = _tree(workdir)
    result = _run(*COMMANDS[command](out))
    assert result.exit_code == 2
    assert result.output == f"error: cannot write output folder {out}: Not a directory\n"
    assert _tree(workdir) == before


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_folder_on_a_pseudo_file_system(workdir: Path, command: str) -> None:
    result = _run(*COMMANDS[command]("/proc/x"))
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot write output folder /proc/x: ")
    assert len(result.output.splitlines()) == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_a_write_failing_mid_run_leaves_nothing(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pipeline, "write_output", full)  # the converted files
    monkeypatch.setattr("ms_fmk_transplt.run.write_all_atomically", full)  # analyse's reports
    before = _tree(workdir)
    result = _run(*COMMANDS[command]("new/out"))
    assert result.exit_code == 2
    assert result.output == "error: cannot write output folder new/out: No space left on device\n"
    assert _tree(workdir) == before  # new/ and new/out/ were made by the run: removed again


def test_an_existing_output_folder_is_kept_on_error(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    (workdir / "out" / "earlier").mkdir(parents=True)
    monkeypatch.setattr(pipeline, "write_output", full)
    result = _run(*COMMANDS["convert"]("out"))
    assert result.exit_code == 2
    assert _tree(workdir / "out") == {"earlier"}


def _writes_anywhere(folder: Path) -> bool:
    """Whether this process writes in a read-only folder (root, CAP_DAC_OVERRIDE)."""
    probe = folder / "probe"
    probe.mkdir(mode=0o555)
    try:
        (probe / "f").write_text("")
    except PermissionError:
        return False
    finally:
        probe.chmod(0o755)
        for child in probe.iterdir():
            child.unlink()
        probe.rmdir()
    return True


@pytest.mark.parametrize("command", COMMANDS)
def test_a_read_only_output_folder(workdir: Path, command: str) -> None:
    if _writes_anywhere(workdir):
        pytest.skip("this user writes in read-only folders (root)")
    (workdir / "ro").mkdir(mode=0o555)
    try:
        result = _run(*COMMANDS[command]("ro"))
        assert result.exit_code == 2
        assert result.output == "error: cannot write output folder ro: Permission denied\n"
        assert list((workdir / "ro").iterdir()) == []
    finally:
        (workdir / "ro").chmod(0o755)


@pytest.mark.parametrize("option", ["--report", "--write-baseline"])
@pytest.mark.parametrize("command", ["convert", "analyse"])
def test_a_report_that_cannot_be_written_stops_the_run_first(
    workdir: Path, option: str, command: str
) -> None:
    (workdir / "folder.json").mkdir()
    before = _tree(workdir)
    result = _run(*COMMANDS[command]("out"), option, "folder.json")
    assert result.exit_code == 2
    assert result.output == "error: cannot write folder.json: it is a folder\n"
    assert _tree(workdir) == before  # checked before the conversion: no out/


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_a_report_on_a_pseudo_file_system(workdir: Path) -> None:
    result = _run(*COMMANDS["analyse"]("out"), "--report", "/proc/r.json")
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot write /proc/r.json: ")
    assert not (workdir / "out").exists()


def test_reports_that_can_be_written(workdir: Path) -> None:
    result = _run(*COMMANDS["analyse"]("new/out"), "--report", "r.json", "--write-baseline", "b.json")
    assert result.exit_code == 0, result.output
    assert {"new/out/report.json", "new/out/unsupported_op.xlsx", "r.json", "b.json"} <= _tree(workdir)
    assert not [name for name in _tree(workdir) if "partial" in name or "probe" in name]
