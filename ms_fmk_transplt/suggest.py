""" "Did you mean" for every name a user types: rule kinds and keys, `--kind`, `--exclude` paths.

difflib's ratio over the whole name, case folded; one suggestion, and only a close one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6


def closest(word: str, choices: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The choice nearest to ``word`` (its own spelling), or None when none is close."""
    spelled = {choice.casefold(): choice for choice in choices}
    found = difflib.get_close_matches(word.casefold(), list(spelled), n=1, cutoff=cutoff)
    return spelled[found[0]] if found else None


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = CUTOFF) -> str:
    """``" (did you mean X?)"`` for the closest choice, or ``""``."""
    found = closest(word, choices, cutoff)
    return f" (did you mean {found}?)" if found is not None else ""
