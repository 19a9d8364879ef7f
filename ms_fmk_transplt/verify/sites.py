"""Call sites in the converted copy (the operator check's), mapped back to the original's file and line."""

from __future__ import annotations

import difflib
import os
from pathlib import Path


def original_line(original: list[str], converted: list[str], line: int) -> int:
    """The 1-based line of ``original`` that converted line ``line`` came from (inserted lines map to
    the original line they were inserted before)."""
    index = line - 1
    matcher = difflib.SequenceMatcher(None, original, converted, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if j1 <= index < j2 or (tag == "delete" and j1 == index):
            if tag == "equal":
                return i1 + (index - j1) + 1
            return min(i1 + (index - j1), max(i1, i2 - 1)) + 1
    return line


def original_site(site: str, converted_root: Path, source_root: Path, cwd: Path) -> str:
    """``file:line`` in the converted copy as ``file:line`` of the original; other sites unchanged."""
    path_text, _, line_text = site.rpartition(":")
    if not line_text.isdigit():
        return site
    try:
        relative = Path(path_text).resolve().relative_to(converted_root.resolve())
    except ValueError:
        return site
    original = source_root / relative
    try:
        original_lines = original.read_text(encoding="utf-8", errors="replace").splitlines()
        converted_lines = Path(path_text).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return site
    line = original_line(original_lines, converted_lines, int(line_text))
    shown = os.path.relpath(original, cwd) if original.is_relative_to(cwd) else str(original)
    return f"{shown}:{line}"
