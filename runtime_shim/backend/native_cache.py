"""The native part's build cache: one folder per torch version and source digest
(`native-torch<version>-<digest>`, backend/native.py), and the pruning of the folders that an
edit of csrc/ left behind.

After a build, the other folders for the same torch version that were built from the same csrc/
folder (the same checkout: other checkouts sharing the interpreter keep theirs) and are older than
the new one are removed, each only once its lock is taken without waiting: a process building or
loading there holds that lock (native._one_build_at_a_time), so its folder is left alone. A folder
is renamed away under its lock before it is deleted, and a process that opens the lock of a folder
renamed away sees it (the lock file at the folder's path is not the one it holds) and starts over,
so nothing ever builds in or loads from a folder being deleted. A process that has loaded the
module keeps it: the loaded file stays mapped after it is deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

LOCK = ".runtime_shim.lock"
MODULE_FILE = "runtime_shim_native.so"
#: The csrc/ folder a build was made from, written beside it (older folders: read from build.ninja).
SOURCE_MARK = ".runtime_shim.source"
_COMPILE = re.compile(r"^build \S+: compile (\S+)$", re.MULTILINE)
_TRASH = re.compile(r"\.native-.+\.pruned-(\d+)")


def mark_source(folder: Path, csrc: Path) -> None:
    """Record which csrc/ folder `folder` was built from."""
    (folder / SOURCE_MARK).write_text(str(csrc) + "\n", encoding="utf-8")


def finished(folder: Path, csrc: Path) -> bool:
    """Whether `folder` holds a module built from `csrc` that the tooling built and loaded: the
    source mark is written only then (the build file, which `origin` also reads, is written
    before the compiler runs)."""
    try:
        return (folder / SOURCE_MARK).read_text(encoding="utf-8").strip() == str(csrc)
    except OSError:
        return False


def origin(folder: Path) -> str | None:
    """The csrc/ folder `folder` was built from; None when it cannot be told (then it is kept)."""
    try:
        return (folder / SOURCE_MARK).read_text(encoding="utf-8").strip() or None
    except OSError:
        pass
    try:
        ninja = (folder / "build.ninja").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    sources = {os.path.dirname(path) for path in _COMPILE.findall(ninja)}
    return sources.pop() if len(sources) == 1 else None


def built_at(folder: Path) -> float:
    """When the module in `folder` was built (its file's time: a load opens the folder's lock file
    and may touch the tooling's logs, which move the folder's own time); the folder's time when it
    holds no module (a build that failed)."""
    try:
        return (folder / MODULE_FILE).stat().st_mtime
    except FileNotFoundError:
        return folder.stat().st_mtime


@contextlib.contextmanager
def taken(folder: Path) -> Iterator[bool]:
    """Try the folder's lock without waiting: True while held, False when another process has it."""
    try:
        handle = open(folder / LOCK, "a")  # closed below, which releases the lock
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        handle.close()


def prune(current: Path, csrc: Path) -> list[Path]:
    """Remove the stale build folders beside `current` (see the module's docstring); returns them.
    Never raises: a folder that cannot be removed is left."""
    removed: list[Path] = []
    version = current.name.rsplit("-", 1)[0]
    try:
        newest = built_at(current)
        others = sorted(current.parent.iterdir())
    except OSError:
        return removed
    for other in others:
        trash = _TRASH.fullmatch(other.name)
        if trash is not None and not _alive(int(trash.group(1))):  # a pruning that was killed
            shutil.rmtree(other, ignore_errors=True)
            continue
        if other == current or other.is_symlink() or not other.is_dir():
            continue
        if not other.name.startswith("native-") or other.name.rsplit("-", 1)[0] != version:
            continue
        try:
            if built_at(other) >= newest or origin(other) != str(csrc):
                continue
            with taken(other) as mine:
                if not mine:
                    continue  # a process builds or loads there
                gone = other.with_name(f".{other.name}.pruned-{os.getpid()}")
                os.rename(other, gone)
        except OSError:
            continue
        shutil.rmtree(gone, ignore_errors=True)
        removed.append(other)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
