"""A converted module's bytes, printing only the top-level statements the conversion replaced.

The transform (engine/syntax/traverse.py) hands back the original node object for every part of the
module it did not change, and the positions pass (engine/syntax/node_positions.py) has already printed the
original module once. So a top-level statement of the result that is an original statement is
written as the text it was read from, and only new statements (rewritten, inserted) are printed.
A module printed otherwise than statement by statement (no trailing newline: libcst removes the
last one) is printed whole. tests/test_traverse.py compares the result with libcst's printing on
every fixture and sample.

The statements printed afresh are handed back too, so that the converter can check that its own
output parses by parsing only them (engine/conversion/convert.py).
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from ms_fmk_transplt.engine.syntax.node_positions import ModuleText


class Printed(NamedTuple):
    """A converted module's bytes, and the text of the top-level statements printed afresh (None:
    the module was printed whole)."""

    data: bytes
    fresh: list[str] | None


def module_bytes(original: cst.Module, new: cst.Module, text: ModuleText | None) -> Printed:
    """`new.bytes`, reusing `text` (the original's printed statements) where `new` kept them."""
    if (
        text is None
        or not original.has_trailing_newline
        or not new.has_trailing_newline
        or not new.body
        or not _same(new.header, original.header)
        or not _same(new.footer, original.footer)
        or (new.default_indent, new.default_newline) != (original.default_indent, original.default_newline)
    ):
        return Printed(new.bytes, None)
    kept = text.statements
    parts = [text.header]
    fresh = []
    for statement in new.body:
        piece = kept.get(id(statement))
        if piece is None:
            piece = new.code_for_node(statement)
            fresh.append(piece)
        parts.append(piece)
    parts.append(text.footer)
    return Printed("".join(parts).encode(new.encoding), fresh)


def _same(left: object, right: object) -> bool:
    """The same sequence of the same node objects (libcst nodes compare by identity)."""
    if left is right:
        return True
    assert isinstance(left, tuple | list) and isinstance(right, tuple | list)
    return len(left) == len(right) and all(a is b for a, b in zip(left, right, strict=True))
