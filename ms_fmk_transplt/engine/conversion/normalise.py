"""Sources CPython parses but libcst mistakes: why, and a normalised re-parse where that is safe.

CPython resets the indentation column at a form feed (`\\f`) in a line's leading whitespace:
only what follows the last form feed counts. libcst's tokenizer counts the whitespace before it
too, so a form feed in the indentation of a block line, or of a comment or blank line among
them, gives "no matching outer block for dedent". Dropping the leading whitespace up to the last
form feed changes no token, so the file converts as normalised, and the dropped bytes are put
back on the same lines of the output; both steps are checked against CPython's own tree.

A line holding only whitespace and a backslash continuation gives the logical line it starts
the indentation of that whitespace in CPython; libcst either rejects it ("expected INDENT") or,
worse, parses it into the wrong block and prints the file back with the backslash gone and the
code moved into or out of a block. Folding the backslash line into a blank line and giving its
indentation to the next line is the same program for CPython, and libcst reads it right.
A final backslash continuation before the end of the file is reported.

CPython measures indentation in columns, a tab taking it to the next multiple of eight, and
accepts a block whose lines mix tabs and spaces as long as the columns agree (ModelZoo has
`    def f():` over `\t    super().__init__()`). libcst keeps indentation as text and wants each
block's to start with the enclosing block's, so it rejects those files. When leading tabs and
spaces are both used, every leading tab is expanded to the columns CPython counts, and put back
on the output's lines. A line the conversion adds takes the original indentation of the nearest
line indented as it is.

The lines after the last line of code, when some are indented (comments between column 0 and
the enclosing block's indentation, whitespace-only lines after a form feed), are printed back by
libcst with some of them gone. Their indentation means nothing to CPython: the normalised
source has them at column 0, and the output gets the original bytes back.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
import warnings
from dataclasses import dataclass

_LEADING = re.compile(rb"^[ \t\f]*")
LONE_BACKSLASH = re.compile(rb"^[ \t\f]*\\\r?\n", re.M)


@dataclass(frozen=True)
class Normalised:
    """The source as libcst can take it; `changes` maps a line index to (original prefix, new prefix)."""

    data: bytes
    changes: dict[int, tuple[bytes, bytes]]


def _string_continuation_lines(data: bytes) -> set[int]:
    """0-based indices of lines that continue a multi-line string: their bytes are string content."""
    inside: set[int] = set()
    try:
        for token in tokenize.tokenize(io.BytesIO(data).readline):
            if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                inside.update(range(token.start[0], token.end[0]))  # lines after the first, 0-based
    except (tokenize.TokenError, SyntaxError):
        pass
    return inside


def _leading(line: bytes) -> bytes:
    match = _LEADING.match(line)
    return match.group() if match else b""


def normalise(data: bytes) -> Normalised | None:
    """The source with form-feed indentation dropped and each lone backslash line folded into the
    next (which takes its indentation); None when there is nothing to normalise."""
    lines = data.splitlines(keepends=True)
    strings = _string_continuation_lines(data)
    out = list(lines)
    for index, line in enumerate(lines):
        cut = _leading(line).rfind(b"\f") + 1
        if cut and index not in strings:
            out[index] = line[cut:]
    if _mixed_indentation(out, strings):
        for index, line in enumerate(out):
            if index not in strings and b"\t" in _leading(line):
                out[index] = _expand_tabs(line)
    for index in range(len(out) - 1):
        if index in strings or index + 1 in strings or not LONE_BACKSLASH.match(out[index]):
            continue
        if LONE_BACKSLASH.match(out[index + 1]):
            continue
        indent = _leading(out[index])
        ending = out[index][len(out[index].rstrip(b"\r\n")) :]
        out[index] = ending  # a blank line: the logical line starts on the next one, as CPython counts
        out[index + 1] = indent + out[index + 1][len(_leading(out[index + 1])) :]
    for index in tail(out, strings):
        out[index] = out[index].lstrip(b" \t\f")
    changes: dict[int, tuple[bytes, bytes]] = {}
    for index, (old, new) in enumerate(zip(lines, out)):
        if old != new:
            common = 0
            while common < min(len(old), len(new)) and old[-1 - common] == new[-1 - common]:
                common += 1
            changes[index] = (old[: len(old) - common], new[: len(new) - common])
    return Normalised(b"".join(out), changes) if changes else None


def _mixed_indentation(lines: list[bytes], strings: set[int]) -> bool:
    """Do the code lines' leading whitespace use both tabs and spaces (string contents, blank and
    comment lines aside: CPython does not measure those)?"""
    tabs = spaces = False
    for index, line in enumerate(lines):
        lead = _leading(line)
        if index in strings or line[len(lead) :].startswith((b"#", b"\n", b"\r")) or len(lead) == len(line):
            continue
        tabs = tabs or b"\t" in lead
        spaces = spaces or b" " in lead
        if tabs and spaces:
            return True
    return False


def _expand_tabs(line: bytes) -> bytes:
    """The line with its leading whitespace as the spaces of CPython's column (tabs to multiples of 8)."""
    lead = _leading(line)
    column = 0
    for char in lead:
        column = (column // 8 + 1) * 8 if char == 0x09 else column + 1
    return b" " * column + line[len(lead) :]


def tail(lines: list[bytes], strings: set[int] | None = None) -> list[int]:
    """Indices of the indented comment and blank lines after the file's last line of code."""
    found = []
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        stripped = line.lstrip(b" \t\f")
        if (strings and index in strings) or not (stripped.startswith(b"#") or not stripped.strip()):
            break
        if stripped != line:
            found.append(index)
    return found


def odd_tail(data: bytes) -> bool:
    """Does the file end with indented comment or whitespace lines (which libcst may drop)?"""
    end = data[-2000:]
    return bool(tail(end.splitlines(keepends=True)[1:]))


def restore(normalised: Normalised, output: bytes) -> bytes | None:
    """Give the output's corresponding lines their original prefixes back; None when a line cannot be found."""
    before = normalised.data.splitlines(keepends=True)
    after = output.splitlines(keepends=True)
    pairs: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            pairs.update(zip(range(i1, i2), range(j1, j2)))
        elif tag == "replace":
            # lines the conversion added (an import) come before the rewritten ones: align the ends
            count = min(i2 - i1, j2 - j1)
            pairs.update(zip(range(i2 - count, i2), range(j2 - count, j2)))
    indents: dict[int, tuple[bytes, bytes]] = {}  # output line: (normalised, original) indentation
    end = b""
    for index, (old_prefix, new_prefix) in normalised.changes.items():
        if index == len(before) and not new_prefix:  # a last line of whitespace alone, normalised away
            end = old_prefix
            continue
        target = pairs.get(index)
        if target is None or not after[target].startswith(new_prefix):
            return None
        lead = _leading(after[target])
        after[target] = old_prefix + after[target][len(new_prefix) :]
        if lead and after[target].strip():  # code or a comment: an indentation to copy
            indents[target] = (lead, _leading(after[target]))
    paired = set(pairs.values())
    for target, line in enumerate(after):
        if target not in paired and line.strip() and _leading(line):
            after[target] = _indent_like_neighbours(line, target, indents)
    return b"".join(after) + end if not end or output.endswith((b"\n", b"\r")) else None


def original_column(normalised: Normalised, line: int, column: int) -> int:
    """The 1-based column in the original source of a position on `line` of the normalised one."""
    old_prefix, new_prefix = normalised.changes.get(line - 1, (b"", b""))
    return column - len(new_prefix) + len(old_prefix) if column > len(new_prefix) else column


def _indent_like_neighbours(line: bytes, target: int, indents: dict[int, tuple[bytes, bytes]]) -> bytes:
    """A line the conversion added, indented as the nearest restored line of its indentation."""
    lead = _leading(line)
    nearest = sorted(indents, key=lambda other: abs(other - target))
    for other in nearest:
        normalised_lead, original_lead = indents[other]
        if normalised_lead == lead:
            return original_lead + line[len(lead) :]
    return line


def same_tree(first: bytes, second: bytes) -> bool:
    """Do CPython's trees of two sources agree (positions aside)?"""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.dump(ast.parse(first)) == ast.dump(ast.parse(second))
    except (SyntaxError, ValueError):
        return False


def libcst_limit(data: bytes) -> str:
    """Why libcst cannot take a source CPython parses, as far as the known forms tell."""
    lines = data.splitlines(keepends=True)
    strings = _string_continuation_lines(data)
    lone = [i + 1 for i, line in enumerate(lines) if i not in strings and LONE_BACKSLASH.match(line)]
    if lone:
        where = ", ".join(map(str, lone[:5])) + (", ..." if len(lone) > 5 else "")
        return (
            f"lines holding only a backslash continuation ({where}) that libcst's tokenizer cannot indent"
            " as CPython does; join each with the next line"
        )
    if _mixed_indentation(lines, strings):
        return "indentation mixing tabs and spaces that libcst's tokenizer cannot read as CPython does"
    if odd_tail(data):
        return "indented comment or blank lines at the end of the file that libcst prints back incompletely"
    if b"\f" in data:
        return "form feeds that libcst's tokenizer counts differently from CPython; remove them"
    return ""
