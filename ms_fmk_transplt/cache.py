"""The incremental result cache: one sqlite3 file mapping a file's bytes and rule set to its result.

A hit stands in for `engine.convert_source` exactly: the key holds everything the result depends
on (the file's relative path and content, the rule files' content, the release, the opt-ins, the
tool version and the installed package's own files), so the cache can make a run faster but never
different. A cache file that is corrupt or not ours is ignored with a warning, never rewritten.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from ms_fmk_transplt import __version__
from ms_fmk_transplt.model import FileResult

CACHE_FILE = "results.sqlite3"
FORMAT = "ms_fmk_transplt result cache 1"


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/ms_fmk_transplt, else ~/.cache/ms_fmk_transplt."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ms_fmk_transplt"


def rule_set_key(rule_files: Sequence[Path], release: str, opt_ins: Iterable[str]) -> bytes:
    """A digest of everything besides the file itself that a conversion result depends on."""
    digest = hashlib.sha256()
    for part in (__version__, release, *sorted(opt_ins)):
        digest.update(part.encode() + b"\0")
    for path in rule_files:
        digest.update(b"rule\0" + Path(path).read_bytes() + b"\0")
    # the package's own code and data: an edited or reinstalled tool never reuses old results
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".json") and path.is_file():
            stat = path.stat()
            digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    return digest.digest()


def file_key(rule_set: bytes, rel: str, data: bytes) -> bytes:
    """The key of one file's result under one rule set."""
    return hashlib.sha256(rule_set + rel.encode() + b"\0" + data).digest()


class ResultCache:
    """Results by key in one sqlite3 file; safe under concurrent runs (WAL, one write per run)."""

    def __init__(self, directory: Path, rule_set: bytes, warnings: list[str]) -> None:
        self.path = directory / CACHE_FILE
        self.rule_set = rule_set
        self.warnings = warnings
        self.pending: list[tuple[bytes, bytes]] = []
        self.db: sqlite3.Connection | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._check_format()
        except (sqlite3.Error, OSError) as exc:
            self._give_up(f"{exc}")

    def _check_format(self) -> None:
        assert self.db is not None
        self.db.execute("BEGIN IMMEDIATE")
        try:
            tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables:
                self.db.execute("CREATE TABLE meta (format TEXT NOT NULL)")
                self.db.execute("INSERT INTO meta VALUES (?)", (FORMAT,))
                self.db.execute("CREATE TABLE results (key BLOB PRIMARY KEY, value BLOB NOT NULL)")
            else:
                row = self.db.execute("SELECT format FROM meta").fetchone() if "meta" in tables else None
                if row is None or row[0] != FORMAT or "results" not in tables:
                    raise sqlite3.DatabaseError("not an ms_fmk_transplt result cache")
        finally:
            self.db.execute("COMMIT")
        # only once the file is known to be ours: readers never wait for a writer
        self.db.execute("PRAGMA journal_mode=WAL")

    def _give_up(self, why: str) -> None:
        self.warnings.append(f"result cache {self.path} ignored: {why}")
        if self.db is not None:
            self.db.close()
        self.db = None

    def key(self, rel: str, data: bytes) -> bytes:
        """The key of one file's result under this cache's rule set."""
        return file_key(self.rule_set, rel, data)

    def get(self, key: bytes, rel: str) -> FileResult | None:
        """The stored result for `key` if it is `rel`'s; None on a miss or an unreadable entry."""
        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._give_up(str(exc))
            return None
        if row is None:
            return None
        try:
            result = pickle.loads(row[0])
        except Exception:  # a damaged entry is only a miss
            return None
        return result if isinstance(result, FileResult) and result.path == rel else None

    def put(self, key: bytes, result: FileResult) -> None:
        """Remember a result; written with the others in one transaction by `flush`."""
        if self.db is not None:
            self.pending.append((key, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)))

    def flush(self) -> None:
        """Write the remembered results and close; a failure to write costs only the speed-up."""
        if self.db is None:
            return
        try:
            if self.pending:
                self.db.execute("BEGIN IMMEDIATE")
                self.db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?)", self.pending)
                self.db.execute("COMMIT")
            self.db.close()
        except sqlite3.Error as exc:
            self._give_up(f"could not store results ({exc})")
        self.db = None
        self.pending = []
