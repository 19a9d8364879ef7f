"""The incremental result cache: one sqlite3 file mapping a file's bytes and rule set to its result.

A hit stands in for `engine.convert_source` exactly: the key holds everything the result depends
on (the file's relative path and content, the rule files' content, the release, the opt-ins, the
tool version and the installed package's own files), so the cache can make a run faster but never
different. A cache file that is corrupt or not ours is ignored with a warning, never rewritten.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ms_fmk_transplt import __version__
from ms_fmk_transplt.engine.project import ModuleFacts
from ms_fmk_transplt.records import FileResult, Finding, PackedFindings

CACHE_FILE = "results.sqlite3"
FORMAT = "ms_fmk_transplt result cache 1"
# results are written in transactions of about this many bytes (one per run on most trees)
FLUSH_BYTES = 32 << 20


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/ms_fmk_transplt, else ~/.cache/ms_fmk_transplt."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ms_fmk_transplt"


def rule_set_key(
    rule_files: Sequence[Path],
    release: str,
    opt_ins: Iterable[str],
    target: str = "npu",
    advice: bool = False,
) -> bytes:
    """A digest of everything besides the file itself that a conversion result depends on."""
    digest = hashlib.sha256()
    for part in (__version__, release, target, *sorted(opt_ins), *(["--advice"] if advice else [])):
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


def _check(packed: bytes) -> bytes:
    """A checksum of a result's packed findings (a few ms for transformers' 37k)."""
    return hashlib.blake2b(packed, digest_size=16).digest()


class ResultCache:
    """Results by key in one sqlite3 file; safe under concurrent runs (WAL, one write per run)."""

    def __init__(self, directory: Path, rule_set: bytes, warnings: list[str]) -> None:
        self.path = directory / CACHE_FILE
        self.rule_set = rule_set
        self.file_set = rule_set  # what a file's key holds besides the file (`knowing`)
        self.part: Callable[[str], bytes] = lambda rel: b""  # ... and besides the other files' (`knowing`)
        self.warnings = warnings
        self.pending: list[tuple[bytes, bytes | bytearray]] = []
        self.pending_bytes = 0
        # this run's findings that are a function of a key: the file's result from the cache or
        # stored under it (by path: the findings tuple and the key)
        self.keyed: dict[str, tuple[Sequence[Finding], bytes]] = {}
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
        """The key of one file's result under this cache's rule set and the run's input tree."""
        return file_key(self.file_set + self.part(rel), rel, data)

    def knowing(self, layout_digest: bytes, part: Callable[[str], bytes] | None = None) -> None:
        """A file's result depends on the input tree's modules too (engine/project/first_party.py), and
        on what the modules it imports hand their parameters to (`part`: ProjectLayout.key_part)."""
        self.file_set = self.rule_set + layout_digest
        if part is not None:
            self.part = part

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
            value = pickle.loads(row[0])
        except Exception:  # a damaged entry is only a miss
            return None
        if not (isinstance(value, tuple) and len(value) == 5 and value[0] == "result"):
            return None
        _, result, count, packed, check = value
        if not (isinstance(result, FileResult) and result.path == rel and isinstance(count, int)):
            return None
        if not count:
            return result
        # the findings stay pickled until something reads them (most warm runs never do), so
        # they are checked here, where unpickling them found damage before: damaged, a miss
        if not (isinstance(packed, bytes) and _check(packed) == check):
            return None
        return dataclasses.replace(result, findings=PackedFindings(packed, count))

    def note(self, rel: str, findings: Sequence[Finding], key: bytes) -> None:
        """`findings` are those of the result kept under `key` (a hit, or a result just stored)."""
        self.keyed[rel] = (findings, key)

    def tables_key(self) -> bytes:
        """Where this rule set's validated rules and compiled tables are kept."""
        return hashlib.sha256(self.rule_set + b"\0compiled rule tables").digest()

    def get_compiled(self) -> tuple[Any, bytes, list[str], tuple[str, ...]] | None:
        """(rules, the tables' pickle, load warnings, text-scan globs) stored for this rule set, or None.

        The tables stay pickled: unpickling them imports the engine and every rule kind (libcst
        with them), which a run whose files are all in the cache never needs."""
        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT value FROM results WHERE key = ?", (self.tables_key(),)).fetchone()
            value = pickle.loads(row[0]) if row is not None else None
        except Exception:  # a damaged entry is only a miss (sqlite errors included)
            return None
        if not (isinstance(value, tuple) and len(value) == 5 and value[0] == "compiled rule tables"):
            return None
        return (value[1], value[2], value[3], value[4]) if isinstance(value[2], bytes) else None

    def put_compiled(self, rules: Any, tables: Any, warnings: list[str]) -> None:
        """Keep the validated rules and compiled tables; a later run with the same rule set skips both."""
        if self.db is not None:
            packed = pickle.dumps(tables, protocol=pickle.HIGHEST_PROTOCOL)
            value = ("compiled rule tables", rules, packed, list(warnings), tables.text_globs())
            self.pending.append((self.tables_key(), pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)))

    def put(self, key: bytes, result: FileResult) -> None:
        """Remember a result; written with the others in one transaction by `flush`. Its findings
        are pickled apart, so that `get` can leave them packed."""
        if self.db is not None:
            findings = tuple(result.findings)
            packed = pickle.dumps(findings, protocol=pickle.HIGHEST_PROTOCOL) if findings else b""
            value = (
                "result",
                dataclasses.replace(result, findings=()),
                len(findings),
                packed,
                _check(packed),
            )
            self._queue(key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def _queue(self, key: bytes, value: bytes | bytearray) -> None:
        """Remember an entry for the next `flush`, flushing at once past FLUSH_BYTES: a large tree's
        results would otherwise be held twice until the end of the run (pickled here, and as the
        results themselves)."""
        self.pending.append((key, value))
        self.pending_bytes += len(value)
        if self.pending_bytes > FLUSH_BYTES:
            self.flush()

    def report_key(self, name: str, root: str) -> bytes:
        """Where the last report `name` written for input `root` under this rule set is kept."""
        return hashlib.sha256(self.rule_set + b"\0report\0" + name.encode() + b"\0" + root.encode()).digest()

    def get_report(self, name: str, root: str, digest: bytes) -> bytes | None:
        """The report kept for `root` if it was written from results with this digest."""
        if self.db is None:
            return None
        key = self.report_key(name, root)
        content_key = self._content_key(key)
        try:
            # one statement: one snapshot of both rows, whatever another run writes meanwhile
            rows = dict(
                self.db.execute("SELECT key, value FROM results WHERE key IN (?, ?)", (key, content_key))
            )
            head = pickle.loads(rows[key]) if key in rows else None
        except Exception:  # a damaged entry is only a miss (sqlite errors included)
            return None
        content = rows.get(content_key)
        if (
            isinstance(head, tuple)
            and len(head) == 3
            and head[:2] == ("report head", digest)
            and isinstance(content, bytes)
            and len(content) == head[2]
        ):
            return content
        return None

    def put_report(self, name: str, root: str, digest: bytes, content: bytes | bytearray) -> None:
        """Keep one report per (rule set, input, name): the next run with the same results reuses it.

        The content is stored as it is (pickling it would copy a report of hundreds of MB), and a
        large one is written at once instead of held until the cache is closed (see `_queue`)."""
        if self.db is not None:
            key = self.report_key(name, root)
            self._queue(
                key, pickle.dumps(("report head", digest, len(content)), protocol=pickle.HIGHEST_PROTOCOL)
            )
            self._queue(self._content_key(key), content)

    @staticmethod
    def _content_key(report_key: bytes) -> bytes:
        return hashlib.sha256(report_key + b"\0content").digest()

    def get_digest(self, keyed: bytes) -> bytes | None:
        """The results digest stored for a digest of the results' keys (see run._Kept)."""
        value = self._tagged(self._digest_key(keyed), "digest")
        return value if isinstance(value, bytes) else None

    def put_digest(self, keyed: bytes, digest: bytes) -> None:
        """Remember the results digest computed for a digest of the results' keys."""
        if self.db is not None:
            value = pickle.dumps(("digest", digest), protocol=pickle.HIGHEST_PROTOCOL)
            self.pending.append((self._digest_key(keyed), value))

    def get_signatures(self, rel: str, data: bytes) -> ModuleFacts | None:
        """What a module's own functions hand their parameters to, stored for its bytes
        (engine/project/project_devices.py); None when not stored."""
        value = self._tagged(self._signatures_key(rel, data), "signatures")
        return value if isinstance(value, ModuleFacts) else None

    def _tagged(self, key: bytes, tag: str) -> object:
        """The value stored under `key` as a `(tag, value)` pair; None when absent or damaged."""
        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
            value = pickle.loads(row[0]) if row is not None else None
        except Exception:  # a damaged entry is only a miss (sqlite errors included)
            return None
        if isinstance(value, tuple) and len(value) == 2 and value[0] == tag:
            return value[1]
        return None

    def put_signatures(self, rel: str, data: bytes, facts: ModuleFacts) -> None:
        """Remember a module's signatures for its bytes."""
        if self.db is not None:
            value = pickle.dumps(("signatures", facts), protocol=pickle.HIGHEST_PROTOCOL)
            self._queue(self._signatures_key(rel, data), value)

    def _signatures_key(self, rel: str, data: bytes) -> bytes:
        return hashlib.sha256(self.rule_set + b"\0signatures\0" + rel.encode() + b"\0" + data).digest()

    def _digest_key(self, keyed: bytes) -> bytes:
        return hashlib.sha256(self.rule_set + b"\0results digest\0" + keyed).digest()

    def flush(self) -> None:
        """Write the remembered entries in one transaction; a failure to write costs only the speed-up."""
        if self.db is None or not self.pending:
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?)", self.pending)
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._give_up(f"could not store results ({exc})")
        self.pending = []
        self.pending_bytes = 0

    def close(self) -> None:
        """Flush and let go of the file."""
        self.flush()
        if self.db is not None:
            self.db.close()
        self.db = None
