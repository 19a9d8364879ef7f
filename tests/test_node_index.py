"""engine/syntax/node_index.py finds every node a libcst visitor visits, except whitespace and punctuation."""

from __future__ import annotations

import libcst as cst
import pytest
from test_positions import _modules, _Nodes

from ms_fmk_transplt.engine.syntax import NodeIndex

FORMATTING = (
    cst.SimpleWhitespace,
    cst.ParenthesizedWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Comment,
    cst.Newline,
    cst.Comma,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.Dot,
    cst.Colon,
    cst.AssignEqual,
    cst.Semicolon,
)


@pytest.mark.parametrize(
    ("name", "module"), _modules(), ids=lambda value: value if isinstance(value, str) else ""
)
def test_index_holds_every_node_but_formatting(name: str, module: cst.Module) -> None:
    collector = _Nodes()
    module.visit(collector)
    expected = {id(node) for node in collector.nodes if not isinstance(node, FORMATTING)}
    index = NodeIndex(module)
    found = [
        node
        for cls in {type(node) for node in collector.nodes}
        for node in index.of(cls)
        if not isinstance(node, FORMATTING)
    ]
    assert {id(node) for node in found} == expected
    assert len(found) == len(expected)  # each once
    assert all(type(node) is cls for cls in (cst.Call, cst.Name) for node in index.of(cls))
