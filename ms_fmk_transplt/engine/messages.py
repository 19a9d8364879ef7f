"""Finding messages composed in one place: a verdict, then what to do, never saying a thing twice."""

from __future__ import annotations

import re

from ms_fmk_transplt.model import Support

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


def support_message(api: str, support: Support, dtypes: str, release: str) -> tuple[str, str]:
    """(message, suggestion) for one classified use of `api` in the given PyTorch release's lists."""
    where = f"PyTorch {release} support list"
    if support is Support.UNSUPPORTED:
        return (
            f"{api} is unsupported on Ascend ({where})",
            "run it on the CPU (.cpu() in, .npu() out) or replace it",
        )
    if support is Support.PARTIAL:
        if dtypes:
            return f"{api} is partially supported on Ascend ({where})", f"use it with {dtypes} only"
        return (
            f"{api} is partially supported on Ascend ({where})",
            "the list gives no dtypes: check the Ascend API documentation for its limits",
        )
    return f"{api} is not verified on Ascend (absent from the {where})", "test it on the NPU"
