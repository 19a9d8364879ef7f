"""Convert discovered entries (serially or in worker processes) and write the output tree.

The conversion of one file is `engine.convert_source`, a pure function; this module only moves
bytes. Output goes to a staging folder that replaces the final folder in one rename at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ms_fmk_transplt.discover import Entry, EntryKind
from ms_fmk_transplt.engine import Tables, convert_source, scan_text
from ms_fmk_transplt.model import FileResult, Status

Progress = Callable[[int, int, str], None]
# below this much Python source, starting worker processes costs more than it saves
PARALLEL_MIN_BYTES = 400_000

_worker_tables: Tables | None = None


def _init_worker(tables: Tables) -> None:
    global _worker_tables
    _worker_tables = tables


def _convert_one(item: tuple[str, str]) -> FileResult:
    rel, path = item
    assert _worker_tables is not None
    return _convert_path(rel, path, _worker_tables)


def _convert_path(rel: str, path: str, tables: Tables) -> FileResult:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return FileResult(rel, Status.FAILED, reason=f"cannot read file ({exc.strerror})")
    return convert_source(rel, data, tables)


def convert_entries(
    entries: Iterable[Entry], tables: Tables, jobs: int = 0, progress: Progress | None = None
) -> list[FileResult]:
    """A FileResult for every entry, in entry order; `jobs` 0 picks serial or parallel by size."""
    entries = list(entries)
    python = [(e.rel, str(e.path)) for e in entries if e.kind is EntryKind.PYTHON]
    size = sum(os.path.getsize(p) for _, p in python)
    if jobs == 0:
        jobs = min(os.cpu_count() or 1, 8) if size >= PARALLEL_MIN_BYTES else 1
    total = len(python)
    converted: dict[str, FileResult] = {}
    if jobs <= 1 or total <= 1:
        for done, (rel, path) in enumerate(python, 1):
            converted[rel] = _convert_path(rel, path, tables)
            if progress:
                progress(done, total, rel)
    else:
        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(tables,)) as pool:
            chunk = max(1, total // (jobs * 8))
            for done, result in enumerate(pool.map(_convert_one, python, chunksize=chunk), 1):
                converted[result.path] = result
                if progress:
                    progress(done, total, result.path)
    results = []
    for entry in entries:
        if entry.kind is EntryKind.PYTHON:
            results.append(converted[entry.rel])
        elif entry.kind is EntryKind.FILE:
            results.append(FileResult(entry.rel, Status.COPIED, findings=_scan(entry, tables)))
        elif entry.kind is EntryKind.LINK:
            results.append(FileResult(entry.rel, Status.LINKED))
        elif entry.kind is EntryKind.SKIP:
            results.append(FileResult(entry.rel, Status.SKIPPED, reason=entry.reason))
    return results


TEXT_SCAN_MAX_BYTES = 1 << 20


def _scan(entry: Entry, tables: Tables) -> tuple:
    if not tables.text_scans_for(entry.rel):
        return ()  # most copied files (images, data) are never read
    try:
        if entry.path.stat().st_size > TEXT_SCAN_MAX_BYTES:
            return ()
        return scan_text(entry.rel, entry.path.read_bytes(), tables)
    except OSError:
        return ()


def write_tree(entries: Iterable[Entry], results: Iterable[FileResult], staging: Path) -> None:
    """Mirror the input into `staging`: converted bytes where there are some, copies elsewhere."""
    by_path = {r.path: r for r in results}
    for entry in entries:
        target = staging / entry.rel
        if entry.kind is EntryKind.DIR:
            target.mkdir(parents=True, exist_ok=True)
        elif entry.kind is EntryKind.LINK:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(entry.link, target)
        elif entry.kind in (EntryKind.PYTHON, EntryKind.FILE):
            target.parent.mkdir(parents=True, exist_ok=True)
            result = by_path.get(entry.rel)
            if result is not None and result.output is not None:
                target.write_bytes(result.output)
                shutil.copystat(entry.path, target)
            else:
                shutil.copy2(entry.path, target)
    # directory modes last: a read-only directory must be filled before it is locked
    for entry in entries:
        if entry.kind is EntryKind.DIR:
            shutil.copystat(entry.path, staging / entry.rel)


class Staging:
    """A sibling folder that becomes `final` in one rename on commit, or vanishes on failure."""

    def __init__(self, final: Path, force: bool = False) -> None:
        self.final = final
        self.force = force
        self.path = final.with_name(f".{final.name}.partial-{os.getpid()}")

    def __enter__(self) -> Path:
        self._remove_abandoned()
        if self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True)
        return self.path

    def _remove_abandoned(self) -> None:
        """Staging folders of runs that were killed outright (their process is gone)."""
        for leftover in self.final.parent.glob(f".{self.final.name}.*-*"):
            pid = leftover.name.rsplit("-", 1)[-1]
            if pid.isdigit() and not _alive(int(pid)):
                _make_writable(leftover)
                shutil.rmtree(leftover, ignore_errors=True)

    def commit(self) -> None:
        old = None
        if self.final.exists() or self.final.is_symlink():
            if not self.force:
                raise FileExistsError(f"{self.final} already exists")
            old = self.final.with_name(f".{self.final.name}.old-{os.getpid()}")
            os.rename(self.final, old)
        os.rename(self.path, self.final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def __exit__(self, *exc_info: object) -> None:
        if self.path.exists():
            _make_writable(self.path)
            shutil.rmtree(self.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _make_writable(path: Path) -> None:
    for directory, _, _ in os.walk(path):
        with contextlib.suppress(OSError):
            os.chmod(directory, 0o755)
