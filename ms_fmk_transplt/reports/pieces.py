"""A report's bytes without copies of the whole file: built in one buffer, written in pieces.

A large tree's reports run to hundreds of MB (the 10M-line ModelZoo tree: a 168 MB report.json,
a 134 MB log). Built as a str and encoded, then put together with a header, each would be held
three or four times over at once; the run's peak memory was set by that. Text is encoded as it is
written into one growing buffer, and a file is written as the pieces it is made of (a header,
the kept body as it is, a footer) instead of one joined copy.
"""

from __future__ import annotations

Piece = bytes | bytearray | memoryview


class Utf8Buffer:
    """A text file's UTF-8 bytes, written as str (a file object for `csv.writer` and `print`)."""

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, text: str) -> int:
        self.data += text.encode()
        return len(text)
