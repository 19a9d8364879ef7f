"""Semantic checks shared by the rule kinds: each returns a problem or None."""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import libcst as cst

from ms_fmk_transplt.ruleset.schema import spell


def problems(entry: Mapping[str, Any], **checks: Callable[[str], str | None]) -> list[tuple[str, str]]:
    """(key, problem) for each key of `entry` given here whose check finds one, in the order given."""
    return [(key, p) for key, check in checks.items() if key in entry and (p := check(entry[key]))]


def identifier(value: str) -> str | None:
    """A Python identifier that is not a keyword."""
    if not value.isidentifier() or keyword.iskeyword(value):
        return f"{spell(value)} is not a valid Python identifier"
    return None


def dotted_name(value: str) -> str | None:
    """Identifiers joined by dots, such as torch.cuda.synchronize."""
    if not value or any(identifier(part) for part in value.split(".")):
        return f"{spell(value)} is not a valid dotted name (identifiers joined by '.')"
    return None


def expression(value: str) -> str | None:
    """Source text that parses as one Python expression."""
    try:
        cst.parse_expression(value)
    except cst.ParserSyntaxError as exc:
        return f"{spell(value)} does not parse as a Python expression ({exc.message})"
    except Exception as exc:  # libcst raises other errors for some malformed input
        return f"{spell(value)} does not parse as a Python expression ({exc})"
    return None


def bare_name(value: str) -> str | None:
    """A warning for source text that is one bare name (`hccl`): most often a string whose quotes
    were forgotten, which the rewrite would write as a variable."""
    name = value.strip()
    if not name.isidentifier() or keyword.iskeyword(name) or name in ("True", "False", "None"):
        return None
    return f"{spell(value)} is the bare name {name}, written as a variable; for the string write {spell(repr(name))}"


def one_of(choices: Iterable[str], noun: str) -> Callable[[str], str | None]:
    """A check that the value is one of `choices` (a handler, a pattern...), naming the valid ones."""
    valid = sorted(choices)

    def check(value: str) -> str | None:
        return None if value in valid else f"{value!r} is not a {noun}; valid: {', '.join(valid)}"

    return check


def non_empty(what: str) -> Callable[[str], str | None]:
    """A check that a name the kind needs (`what`) is given."""
    return lambda value: None if value else f"needs {what}"


def regex(value: str) -> str | None:
    """A regular expression Python can compile."""
    try:
        re.compile(value)
    except re.error as exc:
        return f"not a valid regular expression ({exc})"
    return None
