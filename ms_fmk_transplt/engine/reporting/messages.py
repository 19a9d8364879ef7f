"""Finding messages joined without saying a thing twice (the support verdicts are worded in engine/reporting/support.py)."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9_.]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def join_clauses(*parts: str) -> str:
    """`parts` joined by '; ', dropping any clause whose words all appeared in an earlier clause.

    A rule's suggestion often restates the verdict the engine already wrote ("X has no effect on
    the NPU" + "kernel selection; no effect on the NPU"); the repeat is dropped, the new words kept.
    """
    kept: list[str] = []
    seen: set[str] = set()
    for part in parts:
        for clause in part.split("; "):
            clause = " ".join(clause.split()).rstrip(".")
            words = _words(clause)
            if not clause or (words and set(words) <= seen):
                continue
            kept.append(clause)
            seen.update(words)
    return "; ".join(kept)
