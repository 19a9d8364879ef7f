"""Why a run failed, in one line per cause: the exception each failing process raised and the
line of the project's own code it came through.

The records are ``error.rank<R>.pid<P>.json`` files (runtime_shim/diagnostics/failure_record.py)
beside the step records; a process that left none (killed, aborted in C++, an exception the
script's own hook swallowed) is read from the run's stderr instead: its last traceback, whatever
the launcher printed after it. Never imports torch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
# torchrun and some launchers prefix each line of a rank's output
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]:")
# mp.spawn's parent re-raises a child's exception with the child's traceback in its message
_SPAWNED = re.compile(r"^-- Process (?P<index>\d+) terminated with the following error:")
SHOWN = 4
# what a launcher raises when a child failed: the child's own record says why
LAUNCHER_EXCEPTIONS = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError",)


@dataclass(frozen=True)
class Failure:
    """One cause: the exception line, the project's innermost frame (``file:line``) and the ranks."""

    exception: str
    site: str | None
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class Traceback:
    """A parsed Python traceback: its frames (file, line), innermost last, and its exception line."""

    frames: tuple[tuple[str, int], ...]
    exception: str
    spawned: int | None = None  # the mp.spawn process index whose traceback this is


def parse_traceback(text: str) -> Traceback | None:
    """The last traceback in ``text`` (a chained or re-raised exception's, a spawned child's inside
    its parent's ``ProcessRaisedException``), or None when there is none."""
    lines = [_RANK_PREFIX.sub("", line, count=1) for line in text.splitlines()]
    starts = [i for i, line in enumerate(lines) if line.strip() == TRACEBACK]
    if not starts:
        return None
    frames: list[tuple[str, int]] = []
    spawned = None
    for line in reversed(lines[: starts[-1]]):
        match = _SPAWNED.match(line)
        if match:
            spawned = int(match["index"])
            break
        if line.strip() and not line.startswith(" "):
            break
    for line in lines[starts[-1] + 1 :]:
        match = _FRAME.match(line)
        if match:
            frames.append((match["file"], int(match["line"])))
            continue
        if line[:1].isspace() or not line.strip():
            continue  # a frame's source line, its carets, a blank line
        return Traceback(tuple(frames), line.strip(), spawned)
    return None


def read_failures(
    records: Path, stderr: str, is_project: Callable[[str], bool], site: Callable[[str], str] = str
) -> list[Failure]:
    """The causes of a failed run, first the process records' (the first written first: the root
    cause before the ranks it took down), else stderr's last traceback. ``is_project`` tells a
    frame's file from a library's; ``site`` maps ``file:line`` (to the original's line, for the
    converted copy)."""
    found: dict[tuple[str, str | None], list[int]] = {}
    for rank, parsed in _recorded(records):
        _add(found, parsed, rank, is_project, site)
    if not found:
        printed = parse_traceback(stderr)
        if printed is not None:
            _add(found, printed, None, is_project, site)
        else:
            last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
            if last:
                found[(last, None)] = []
    return [Failure(exception, where, tuple(ranks)) for (exception, where), ranks in found.items()]


def _recorded(records: Path) -> Iterable[tuple[int | None, Traceback]]:
    if not records.is_dir():
        return []
    parsed: list[tuple[float, int, Traceback]] = []
    for path in records.glob("error.rank*.json"):
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            rank, text = int(entry["rank"]), str(entry["traceback"])
            when = float(entry.get("time", 0.0))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a record is a help: one that cannot be read leaves stderr to tell
        traceback = parse_traceback(text)
        if traceback is not None and not traceback.exception.startswith(LAUNCHER_EXCEPTIONS):
            parsed.append((when, rank, traceback))
    parsed.sort(key=lambda item: (item[0], item[1]))
    return [(rank, traceback) for _, rank, traceback in parsed]


def _add(
    found: dict[tuple[str, str | None], list[int]],
    parsed: Traceback,
    rank: int | None,
    is_project: Callable[[str], bool],
    site: Callable[[str], str],
) -> None:
    own = [f"{file}:{line}" for file, line in parsed.frames if is_project(file)]
    where = site(own[-1]) if own else None
    if parsed.spawned is not None:
        rank = parsed.spawned
    ranks = found.setdefault((parsed.exception, where), [])
    if rank is not None and rank not in ranks:
        ranks.append(rank)


def failure_lines(failures: list[Failure]) -> list[str]:
    """One line per cause, at most SHOWN: ``rank 1: RuntimeError: boom (train.py:12)``; a single
    process (rank 0 alone) is not named."""
    lines = []
    alone = all(failure.ranks in ((), (0,)) for failure in failures)
    for failure in failures[:SHOWN]:
        who = ""
        if alone:
            pass
        elif len(failure.ranks) == 1:
            who = f"rank {failure.ranks[0]}: "
        elif failure.ranks:
            who = f"ranks {', '.join(map(str, failure.ranks))}: "
        where = f" ({failure.site})" if failure.site else ""
        lines.append(f"{who}{failure.exception}{where}")
    if len(failures) > SHOWN:
        lines.append(f"and {len(failures) - SHOWN} other cause(s)")
    return lines


def project_test(*roots: Path) -> Callable[[str], bool]:
    """Whether a traceback's file lies under one of ``roots`` and outside installed packages."""
    resolved = [root.resolve() for root in roots]

    def test(file: str) -> bool:
        if "site-packages" in file or "dist-packages" in file or file.startswith("<"):
            return False
        try:
            path = Path(file).resolve()
        except OSError:
            return False
        return any(path.is_relative_to(root) for root in resolved)

    return test
