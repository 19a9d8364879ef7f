"""An input file or folder that cannot be read (no permission, gone since it was found) is a
skipped file, named with its reason in the log and on the console; the run goes on, the rest of
the output tree is complete, and the exit code is 1.

Root reads a chmod 000 file, so most tests make the read fail instead; the chmod test runs as
any other user.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt import run as run_module
from ms_fmk_transplt.cli import app
from ms_fmk_transplt.pipeline import copy_input

CODE = "import torch\nx = torch.zeros(1).cuda()\n"
CONVERTED = "import torch\nimport torch_npu\nx = torch.zeros(1).npu()\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    (root / "good.py").write_text(CODE)
    (root / "unread.py").write_text(CODE)
    (root / "notes.txt").write_text("notes\n")
    (root / "sub" / "more.py").write_text(CODE)
    (root / "sub" / "data.bin").write_bytes(bytes(range(256)))
    return root


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _deny(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """Opening `denied` fails as it does without read permission."""
    real = io.open

    def guarded(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(file, (str, os.PathLike)) and os.fspath(file) == os.fspath(denied):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", guarded)  # pathlib reads through io.open
    monkeypatch.setattr(builtins, "open", guarded)  # shutil copies through open
    real_os_open = os.open

    def guarded_os_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(file, (str, os.PathLike)) and os.fspath(file) == os.fspath(denied):
            raise PermissionError(errno.EACCES, "Permission denied", file)
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_os_open)  # the pipeline copies by descriptor


def _convert(source: Path, *args: str):
    out = source.parent / "out"
    result = CliRunner().invoke(app, ["-i", str(source), "-o", str(out), "--no-cache", *args])
    return result, out / f"{source.name}_msft"


REPORTS = {"msFmkTranspltlog.txt", "change_list.csv", "unsupported_op.xlsx", "report.json"}


@pytest.mark.parametrize("rel", ["unread.py", "notes.txt", "sub/more.py", "sub/data.bin"])
def test_an_unreadable_file_is_skipped_and_the_run_goes_on(
    tree: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> None:
    _deny(monkeypatch, tree / rel)
    result, final = _convert(tree, "-j", "1")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1
    assert _files(final) == (_files(tree) - {rel}) | REPORTS
    assert (final / "good.py").read_text() == CONVERTED
    assert f"{rel}: cannot read file (Permission denied)" in (final / "msFmkTranspltlog.txt").read_text()
    assert f"skipped: {rel}: cannot read file (Permission denied)" in " ".join(result.output.split())
    assert [p.name for p in final.parent.iterdir()] == [final.name]  # no staging folder left


def test_a_readable_tree_converts_whole(tree: Path) -> None:
    result, final = _convert(tree, "-j", "1", "-q")
    assert result.exit_code == 0, result.output
    assert _files(final) == _files(tree) | REPORTS
    assert "cannot read" not in (final / "msFmkTranspltlog.txt").read_text()


@pytest.mark.parametrize("rel", ["unread.py", "notes.txt"])
def test_a_file_gone_after_discovery_is_skipped(
    tree: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> None:
    real = run_module.discover

    def discover_then_remove(*args, **kwargs):  # type: ignore[no-untyped-def]
        entries = real(*args, **kwargs)
        (tree / rel).unlink()
        return entries

    monkeypatch.setattr(run_module, "discover", discover_then_remove)
    result, final = _convert(tree, "-j", "1", "-q")
    assert result.exit_code == 1, result.output
    assert _files(final) == _files(tree) | REPORTS  # all that is left of the input
    assert (
        f"{rel}: cannot read file (No such file or directory)" in (final / "msFmkTranspltlog.txt").read_text()
    )


def test_an_unlistable_folder_is_skipped(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.scandir

    def guarded(path):  # type: ignore[no-untyped-def]
        if os.fspath(path) == os.fspath(tree / "sub"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", guarded)
    result, final = _convert(tree, "-j", "1", "-q")
    assert result.exit_code == 1
    assert _files(final) == {"good.py", "unread.py", "notes.txt"} | REPORTS
    assert (final / "sub").is_dir()
    assert "sub: cannot list directory (Permission denied)" in (final / "msFmkTranspltlog.txt").read_text()


def _reads_anything(folder: Path) -> bool:
    """Whether this process reads a file whatever its mode (root, CAP_DAC_OVERRIDE)."""
    probe = folder / "probe"
    probe.write_text("")
    probe.chmod(0)
    try:
        probe.read_bytes()
    except PermissionError:
        return False
    finally:
        probe.unlink()
    return True


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_unreadable_files_and_folders_for_real(tree: Path, tmp_path: Path, jobs: str) -> None:
    if _reads_anything(tmp_path):
        pytest.skip("this user reads files whatever their mode (root)")
    locked = [tree / "unread.py", tree / "notes.txt", tree / "sub"]
    for path in locked:
        path.chmod(0)
    try:
        result, final = _convert(tree, "-j", jobs)
    finally:
        for path in locked:
            path.chmod(0o755)
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    for line in (
        "skipped: unread.py: cannot read file (Permission denied)",
        "skipped: notes.txt: cannot read file (Permission denied)",
        "skipped: sub: cannot list directory (Permission denied)",
    ):
        assert line in output
    assert (final / "good.py").read_text() == CONVERTED


def test_copy_input_tells_an_unreadable_input_from_an_unwritable_output(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _deny(monkeypatch, tree / "notes.txt")
    target = tmp_path / "copy.txt"
    assert copy_input(tree / "notes.txt", target) == "cannot read file (Permission denied)"
    assert not target.exists()
    assert copy_input(tree / "good.py", target) is None
    assert target.read_text() == CODE
    with pytest.raises(FileNotFoundError):  # the output's folder is missing: not the input's fault
        copy_input(tree / "good.py", tmp_path / "missing" / "copy.py")
