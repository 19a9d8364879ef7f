"""libcst's parser, without validating again the nodes the parser itself built.

Every libcst node checks itself when it is constructed (`CSTNode.__post_init__` calls
`_validate`), which is there to catch hand-made trees that would print as invalid Python. The
native parser builds each node through the same constructor, so parsing a file validates every
node of a tree the grammar has just accepted: 17-25 % of `parse_module`'s CPU on pytorch/examples
(libcst's own source notes the same cost). `parse_module` here switches the check off for the
parse only; nodes the engine builds afterwards (its rewrites) are validated as before.
tests/test_traverse.py checks both trees are equal on every fixture and that the check is back.

The cyclic garbage collector is off during the parse too: the parser builds hundreds of
thousands of acyclic nodes per MB, and the collections they set off walked every live node again
(a 5 MB file parsed at 5.36 s/MB with the collector, 4.54 without; 1 MB: 4.01 and 3.83).
"""

from __future__ import annotations

import gc
import threading

import libcst as cst
from libcst._nodes.base import CSTNode

_LOCK = threading.Lock()  # the switch is process-wide: one parse at a time holds it


def _unchecked(self: CSTNode) -> None:
    """A parsed node: the grammar has accepted it."""


def parse_module(data: bytes | str) -> cst.Module:
    """`libcst.parse_module(data)`, its nodes not validated a second time."""
    with _LOCK:
        checked = CSTNode.__post_init__
        CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]  # off while parsing: the grammar has checked the nodes
        collecting = gc.isenabled()
        gc.disable()
        try:
            return cst.parse_module(data)
        finally:
            CSTNode.__post_init__ = checked  # type: ignore[method-assign]  # libcst's own check, back
            if collecting:
                gc.enable()
