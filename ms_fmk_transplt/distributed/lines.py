"""Line numbers of a rewritten text mapped back to the text it was made from."""

from __future__ import annotations

import difflib


def line_map(before: str, after: str) -> list[int]:
    """For each line of `after` (index 0 is line 1), the line of `before` it comes from; an inserted
    line maps to the line before the insertion (line 1 at the top), a replaced one to its block."""
    old, new = before.splitlines(), after.splitlines()
    mapped = [1] * (len(new) + 1)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            if tag == "equal":
                mapped[j] = i1 + (j - j1) + 1
            elif tag == "replace":
                mapped[j] = i1 + min(j - j1, i2 - i1 - 1) + 1
            else:  # insert
                mapped[j] = max(i1, 1)
    return mapped


def map_line(mapping: list[int], line: int) -> int:
    """Line `line` (1-based) of the rewritten text in the original one."""
    return mapping[line - 1] if 0 < line <= len(mapping) else line
