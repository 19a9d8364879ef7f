"""Original positions of the few nodes a file reports, at the price of printing the module once
(the same printing gives each top-level statement's text, which engine/syntax/splice.py reuses).

libcst's `PositionProvider` records a range for every node of the module while it prints it:
on pytorch/examples that costs ~7x the printing itself, and a run needs the ranges of only the
nodes its findings point at. `positions` prints the module through a codegen state that keeps
ranges only for those nodes (and the parts libcst takes their ranges from: a compound statement
ends where its body ends). The ranges are libcst's syntactic ones; a test
compares them with `PositionProvider` on every node of real files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")
_NOTHING = nullcontext()
Range = tuple[tuple[int, int], tuple[int, int]]  # ((start line, start column), (end line, end column))


class _Recorder(CodegenState):
    """Prints like libcst; records ranges for the wanted nodes only, and where each top-level
    statement's tokens start and end.

    Line and column are counted from the tokens only when a wanted node starts or ends: the
    printing adds ~1,300 tokens per 100 lines, and a Python call per token to count it as it came
    was a third of this pass."""

    def __init__(self, module: cst.Module, wanted: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.wanted = wanted
        self.tops = {id(statement) for statement in module.body}
        self.bounds: dict[int, tuple[int, int]] = {}
        self.line = 1
        self.column = 0
        self.counted = 0  # how many tokens line and column take in
        self.starts: list[tuple[int, int]] = []
        self.ranges: dict[int, Range] = {}
        self.add_token = self.tokens.append  # type: ignore[method-assign,assignment]  # add_token only appends: one call fewer a token

    def _where(self) -> tuple[int, int]:
        """(line, column) after the tokens printed so far."""
        tokens = self.tokens
        if self.counted < len(tokens):
            new = tokens[self.counted :]
            self.counted = len(tokens)
            text = "".join(new)
            if "\r" in text:  # token by token: a CR ending one and a LF starting the next are two ends
                for token in new:
                    self._advance(token)
            elif "\n" in text:
                self.line += text.count("\n")
                self.column = len(text) - text.rindex("\n") - 1
            else:
                self.column += len(text)
        return self.line, self.column

    def _advance(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def pop_trailing_newline(self) -> None:
        self._where()  # the newline counts, as it did when it was printed
        super().pop_trailing_newline()
        self.counted = len(self.tokens)

    def before_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.tops:
            self.bounds[key] = (len(self.tokens), -1)
        if key in self.wanted:
            self.starts.append(self._where())

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.tops:
            self.bounds[key] = (self.bounds[key][0], len(self.tokens))
        if key in self.wanted:
            start = self.starts.pop()
            # a syntactic range recorded while printing the node's insides wins, as in libcst
            self.ranges.setdefault(key, (start, self._where()))

    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> Any:
        if id(node) not in self.wanted:
            return _NOTHING
        return self._syntactic(node, start_node, end_node)

    @contextmanager
    def _syntactic(
        self, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None
    ) -> Iterator[None]:
        # libcst takes a compound statement's end from its body (and a statement line's start from
        # its first statement): those are printed inside this one, so ask for them now
        for hoisted in (start_node, end_node):
            if hoisted is not None:
                self.wanted.add(id(hoisted))
        start = self._where()
        try:
            yield
        finally:
            end = self._where()
            if start_node is not None:
                start = self.ranges[id(start_node)][0]
            if end_node is not None:
                end = self.ranges[id(end_node)][1]
            self.ranges[id(node)] = (start, end)


def positions(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, Range]:
    """id(node) -> its syntactic range in `module`, for each of `nodes` (original nodes of it)."""
    return positions_and_text(module, nodes)[0]


class ModuleText:
    """A module's printed text cut at its top-level statements (engine/syntax/splice.py reuses them)."""

    __slots__ = ("footer", "header", "statements")

    def __init__(self, header: str, statements: dict[int, str], footer: str) -> None:
        self.header = header
        self.statements = statements  # id(top-level statement) -> its text
        self.footer = footer


def positions_and_text(
    module: cst.Module, nodes: Iterable[cst.CSTNode]
) -> tuple[dict[int, Range], ModuleText]:
    """`positions`, and the module's text by top-level statement, from the same printing."""
    asked = {id(node) for node in nodes}
    recorder = _Recorder(module, set(asked))
    module._codegen(recorder)
    tokens, bounds = recorder.tokens, recorder.bounds
    body = module.body
    first = bounds[id(body[0])][0] if body else len(tokens)
    last = bounds[id(body[-1])][1] if body else len(tokens)
    text = ModuleText(
        "".join(tokens[:first]),
        {key: "".join(tokens[start:end]) for key, (start, end) in bounds.items()},
        "".join(tokens[last:]),
    )
    return {key: value for key, value in recorder.ranges.items() if key in asked}, text
