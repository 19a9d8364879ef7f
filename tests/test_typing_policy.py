"""The typing policy holds: mypy's strict options stay on, and every `type: ignore` says why."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ms_fmk_transplt", "runtime_shim")  # what [tool.mypy] files checks
REQUIRED_OPTIONS = ("disallow_untyped_defs", "check_untyped_defs", "disallow_any_generics")

_IGNORE = re.compile(r"type:\s*ignore\b")
# `# type: ignore[code, code]  # why`: error codes, then a comment of its own with some words
_WITH_REASON = re.compile(r"#\s*type:\s*ignore\[[a-z0-9-]+(?:,\s*[a-z0-9-]+)*\]\s+#\s*\S.*")


def unexplained_ignores(source: str) -> list[tuple[int, str]]:
    """(line, comment) of each `type: ignore` comment in `source` without error codes and a reason."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        at = _IGNORE.search(token.string)
        if at is None:
            continue
        # the ignore may follow another comment on its line: only what follows the ignore is read
        start = token.string.rfind("#", 0, at.start())
        if not _WITH_REASON.fullmatch(token.string[start:]):
            found.append((token.start[0], token.string))
    return found


@pytest.mark.parametrize(
    ("line", "explained"),
    [
        ("x = f()  # type: ignore[attr-defined]  # torch's stubs lack it\n", True),
        ("x = f()  # type: ignore[method-assign,assignment]  # the patch\n", True),
        ("x = f()  # type: ignore[method-assign, assignment]  # the patch\n", True),
        ("x = f()  # type: ignore[attr-defined]\n", False),
        ("x = f()  # type: ignore\n", False),
        ("x = f()  # type: ignore  # a reason without codes\n", False),
        ("x = f()  # type: ignore[attr-defined]  #\n", False),
        ("x = f()  # type: ignore[attr-defined] # \n", False),
        ("x = f()  # type:ignore[misc]\n", False),
        ('x = "# type: ignore[misc]"\n', True),  # a string, not a comment
        ("x = f()  # noqa: E501  # type: ignore[misc]\n", False),
    ],
)
def test_an_ignore_needs_codes_and_a_reason(line: str, explained: bool) -> None:
    assert (unexplained_ignores(line) == []) is explained


def test_every_type_ignore_says_why() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line}: {comment}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, comment in unexplained_ignores(path.read_text(encoding="utf-8"))
    ]
    assert not bad, "a `type: ignore` needs its error codes and `  # why` after them:\n" + "\n".join(bad)


def test_mypy_keeps_its_strict_options() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert sorted(mypy["files"]) == sorted(PACKAGES)
    off = [option for option in REQUIRED_OPTIONS if mypy.get(option) is not True]
    assert not off, f"pyproject.toml [tool.mypy] must keep {', '.join(off)} = true"
