"""Taking names out of a `from` import without losing its layout or its comments.

When some names of `from torch import (cuda,  # note\n optim,)` move to another module, the
statement keeps the others in their own layout, and each moved name takes the comment that stood
on its line to its new statement. Own-line comments between names stay where they were.

The whitespace around the names is read as gaps: one before the first name (after `import` or
after `(`) and one after each name (after its comma, or before `)` for a last name without one).
Removing a name merges the gaps on either side of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

_Gap = cst.BaseParenthesizableWhitespace
_INDENT = "    "


def same_line_comment(gap: _Gap) -> cst.Comment | None:
    """The comment ending the line a gap starts on (`cuda,  # note`)."""
    return gap.first_line.comment if isinstance(gap, cst.ParenthesizedWhitespace) else None


def _gaps(node: cst.ImportFrom, names: Sequence[cst.ImportAlias]) -> list[_Gap]:
    """gaps[0] before the first name, gaps[i + 1] after name i."""
    first = node.lpar.whitespace_after if node.lpar else node.whitespace_after_import
    gaps = [first]
    for i, alias in enumerate(names):
        if isinstance(alias.comma, cst.Comma):
            gaps.append(alias.comma.whitespace_after)
        elif node.rpar is not None and i == len(names) - 1:
            gaps.append(node.rpar.whitespace_before)
        else:
            gaps.append(cst.SimpleWhitespace(""))
    return gaps


def _merge(before: _Gap, after: _Gap, last: bool) -> _Gap:
    """The gap left when the name between `before` and `after` goes (its line's comment goes with it)."""
    if isinstance(before, cst.ParenthesizedWhitespace) and isinstance(after, cst.ParenthesizedWhitespace):
        return before.with_changes(
            empty_lines=[*before.empty_lines, *after.empty_lines],
            indent=after.indent,
            last_line=after.last_line,
        )
    if isinstance(before, cst.ParenthesizedWhitespace):
        # `(\n    optim,\n    cuda)`: the closing parenthesis comes to the start of the next line
        return before.with_changes(last_line=cst.SimpleWhitespace("")) if last else before
    if isinstance(after, cst.ParenthesizedWhitespace):
        if after.empty_lines or last:
            # own-line comments below the removed name, or the line break before `)`, stay
            return after.with_changes(first_line=cst.TrailingWhitespace())
        return before
    return after if last else before


def without_names(
    node: cst.ImportFrom, names: Sequence[cst.ImportAlias], keep: Sequence[bool]
) -> cst.ImportFrom:
    """`node` with `names` (its names, renamed or not) cut to those `keep` marks; at least one is kept."""
    gaps = _gaps(node, names)
    last = len(names) - 1
    kept: list[cst.ImportAlias] = []
    gap = gaps[0]
    lead: _Gap | None = None
    for i, alias in enumerate(names):
        if not keep[i]:
            gap = _merge(gap, gaps[i + 1], i == last)
            continue
        if kept:
            kept[-1] = _with_gap_after(kept[-1], gap)
        else:
            lead = gap
        kept.append(alias)
        gap = gaps[i + 1]
    assert lead is not None, "without_names keeps at least one name"
    changes: dict[str, object] = {}
    if node.lpar:
        changes["lpar"] = node.lpar.with_changes(whitespace_after=lead)
    else:
        changes["whitespace_after_import"] = lead
    ended_with_comma = isinstance(names[last].comma, cst.Comma)
    if keep[last]:
        pass
    elif node.rpar is not None and ended_with_comma:
        kept[-1] = _with_gap_after(kept[-1], gap)
    else:  # the new last name takes no comma; what stood before `)` stays there
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if node.rpar is not None:
            changes["rpar"] = node.rpar.with_changes(whitespace_before=gap)
    return node.with_changes(names=kept, **changes)


def _with_gap_after(alias: cst.ImportAlias, gap: _Gap) -> cst.ImportAlias:
    comma = alias.comma if isinstance(alias.comma, cst.Comma) else cst.Comma()
    return alias.with_changes(comma=comma.with_changes(whitespace_after=gap))


def comments_after(node: cst.ImportFrom, names: Sequence[cst.ImportAlias]) -> list[cst.Comment | None]:
    """For each name, the comment on the rest of its line, if any."""
    return [same_line_comment(gap) for gap in _gaps(node, names)[1:]]


def import_from(
    module: cst.Attribute | cst.Name,
    names: Sequence[cst.ImportAlias],
    comments: Sequence[cst.Comment | None],
    indent: str = _INDENT,
) -> cst.ImportFrom:
    """A fresh `from module import a, b` on one line; one name a line, in parentheses, to keep comments."""
    bare = [cst.ImportAlias(name=a.name, asname=a.asname) for a in names]
    if not any(comments):
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        return cst.ImportFrom(
            module=module, names=[a.with_changes(comma=comma) for a in bare[:-1]] + bare[-1:]
        )

    def line_break(comment: cst.Comment | None, last: bool) -> cst.ParenthesizedWhitespace:
        return cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  " if comment else ""), comment=comment
            ),
            indent=True,
            last_line=cst.SimpleWhitespace("" if last else indent),
        )

    spread = [
        a.with_changes(comma=cst.Comma(whitespace_after=line_break(c, i == len(bare) - 1)))
        for i, (a, c) in enumerate(zip(bare, comments))
    ]
    return cst.ImportFrom(
        module=module,
        names=spread,
        lpar=cst.LeftParen(whitespace_after=line_break(None, False)),
        rpar=cst.RightParen(),
    )


def import_line(
    module: cst.Attribute | cst.Name,
    names: Sequence[cst.ImportAlias],
    comments: Sequence[cst.Comment | None],
    indent: str = _INDENT,
) -> cst.SimpleStatementLine:
    """A statement line importing `names` from `module`: one name's comment ends the line."""
    if len(names) == 1 and comments[0] is not None:
        return cst.SimpleStatementLine(
            body=[import_from(module, names, [None])],
            trailing_whitespace=cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  "), comment=comments[0]
            ),
        )
    return cst.SimpleStatementLine(body=[import_from(module, names, comments, indent)])


def name_indent(node: cst.ImportFrom) -> str:
    """The indentation of the names in a parenthesized import over several lines, else four spaces."""
    gap = node.lpar.whitespace_after if node.lpar else None
    if isinstance(gap, cst.ParenthesizedWhitespace) and gap.last_line.value:
        return gap.last_line.value
    return _INDENT
