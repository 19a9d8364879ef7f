"""The output tree's copies and written files carry what shutil.copy2 carries: bytes, mode, times
and extended attributes (the pipeline copies by descriptor, not through copy2)."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from ms_fmk_transplt import pipeline
from ms_fmk_transplt.pipeline import copy_input, write_output

MTIME_NS = 1_600_000_000_123_456_789
ATIME_NS = 1_500_000_000_987_654_321


def _source(tmp_path: Path, mode: int = 0o750, xattr: bool = False) -> Path:
    source = tmp_path / "in" / "model.py"
    source.parent.mkdir()
    source.write_bytes(b"import torch\n" * 1000)
    if xattr:
        try:
            os.setxattr(source, "user.origin", b"dataset-a")
        except (OSError, AttributeError):
            pytest.skip("no user extended attributes on this file system")
    source.chmod(mode)
    os.utime(source, ns=(ATIME_NS, MTIME_NS))
    return source


def _metadata(path: Path) -> tuple:
    info = path.stat()
    names = sorted(os.listxattr(path)) if hasattr(os, "listxattr") else []
    # the access time is left out: a copy takes the source's after reading it, as copy2 does, and
    # the kernel moves that with each read while it is not past the change time (relatime)
    return (oct(info.st_mode & 0o7777), info.st_mtime_ns, [(name, os.getxattr(path, name)) for name in names])


@pytest.mark.parametrize("mode", [0o750, 0o444, 0o4755, 0o600])
@pytest.mark.parametrize("xattr", [False, True])
def test_a_copy_carries_what_copy2_carries(tmp_path: Path, mode: int, xattr: bool) -> None:
    source = _source(tmp_path, mode, xattr)
    shutil.copy2(source, tmp_path / "by_copy2.py")
    assert copy_input(source, tmp_path / "copied.py") is None
    assert copy_input(source, tmp_path / "from_bytes.py", source.read_bytes()) is None
    expected = _metadata(tmp_path / "by_copy2.py")
    for name in ("copied.py", "from_bytes.py"):
        assert _metadata(tmp_path / name) == expected, name
        assert (tmp_path / name).stat().st_atime_ns <= source.stat().st_atime_ns
        assert (tmp_path / name).read_bytes() == source.read_bytes()


def test_a_copy_from_bytes_writes_those_bytes(tmp_path: Path) -> None:
    # the bytes the cache key was computed from, even if the file changed since it was read
    source = _source(tmp_path)
    assert copy_input(source, tmp_path / "out.py", b"x = 1\n") is None
    assert (tmp_path / "out.py").read_bytes() == b"x = 1\n"


def test_an_empty_file_and_a_large_one_copy_whole(tmp_path: Path) -> None:
    for name, content in (("empty.py", b""), ("large.bin", os.urandom(3 << 20))):
        (tmp_path / name).write_bytes(content)
        assert copy_input(tmp_path / name, tmp_path / f"copy-{name}") is None
        assert (tmp_path / f"copy-{name}").read_bytes() == content


def test_a_copy_without_sendfile_falls_back_to_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _source(tmp_path)

    def no_sendfile(*args: object) -> int:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "sendfile", no_sendfile)
    assert copy_input(source, tmp_path / "out.py") is None
    assert (tmp_path / "out.py").read_bytes() == source.read_bytes()
    assert (tmp_path / "out.py").stat().st_mtime_ns == MTIME_NS


def test_written_output_takes_the_sources_metadata(tmp_path: Path) -> None:
    source = _source(tmp_path, 0o751)
    write_output(source, tmp_path / "out.py", b"converted\n")
    shutil.copy2(source, tmp_path / "by_copy2.py")
    assert (tmp_path / "out.py").read_bytes() == b"converted\n"
    assert _metadata(tmp_path / "out.py") == _metadata(tmp_path / "by_copy2.py")


def test_written_output_of_a_source_gone_keeps_default_metadata(tmp_path: Path) -> None:
    write_output(tmp_path / "gone.py", tmp_path / "out.py", b"converted\n")
    assert (tmp_path / "out.py").read_bytes() == b"converted\n"


def test_a_source_gone_is_a_reason_and_leaves_no_copy(tmp_path: Path) -> None:
    for data in (None, b"x = 1\n"):
        assert copy_input(tmp_path / "gone.py", tmp_path / "out.py", data) == (
            "cannot read file (No such file or directory)"
        )
        assert not (tmp_path / "out.py").exists()


def test_other_platforms_copy_through_shutil(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "_BY_FD", False)
    source = _source(tmp_path, 0o640)
    assert copy_input(source, tmp_path / "copied.py", b"ignored: copy2 reads the file") is None
    write_output(source, tmp_path / "written.py", b"converted\n")
    assert (tmp_path / "copied.py").read_bytes() == source.read_bytes()
    assert _metadata(tmp_path / "written.py")[:2] == _metadata(source)[:2]
