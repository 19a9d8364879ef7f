"""`ms_fmk_transplt explain FILE[:LINE]`: why did (or didn't) this change?

For each string literal of a file (or of one line): its role and the evidence for it, as the
role pass (engine/literals/roles.py) gave it before the rewrite; then each finding with its rule: what
changed and what was reported. The file is read, never written.

A notebook is explained as it is converted: its code cells as one module. Lines are the notebook
file's (as findings give them), with the cell and the line in it named; columns are within the
cell's line.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from ms_fmk_transplt.analysis import status_of
from ms_fmk_transplt.engine.conversion import (
    CodeCells,
    ModuleRewriter,
    code_cells,
    convert_source,
    is_notebook,
)
from ms_fmk_transplt.engine.interface import STRINGS, Tables
from ms_fmk_transplt.engine.syntax import NodeIndex, positions
from ms_fmk_transplt.targets import DEFAULT_TARGET

_STRINGS = (cst.SimpleString, cst.FormattedString)


@dataclass(frozen=True)
class LiteralLine:
    """One literal: where, as written, its role and why."""

    line: int
    column: int
    code: str
    role: str
    why: str


def _device_pattern(tables: Tables) -> tuple[re.Pattern[str], str, Callable[[str], bool] | None]:
    """The device rule's pattern, prefix and test of what it writes (the string rule with a
    `device_context`)."""
    for hook in tables.hooks.all(STRINGS):
        rule = getattr(hook, "rule", None)
        if rule is not None and "device_context" in rule.params:
            # not on the protocol: the device rule's own fields
            return getattr(hook, "pattern"), getattr(hook, "old"), getattr(hook, "converted")  # noqa: B009
    return re.compile(r"cuda(:\d+)?"), "cuda", None


def literal_roles(data: bytes, tables: Tables) -> list[LiteralLine]:
    """Every string literal of the source with its role and evidence, in file order."""
    module = cst.parse_module(data)
    converter = ModuleRewriter(tables, module)
    pattern, old, converted = _device_pattern(tables)
    literals = [node for cls in _STRINGS for node in NodeIndex(module).of(cls)]
    where = positions(module, literals)
    rows = []
    for node in literals:
        (start_line, start_column), _ = where[id(node)]
        value = node.evaluated_value if isinstance(node, cst.SimpleString) else None
        text = value if isinstance(value, str) else ""
        evidence = converter.roles.explain(node, text, pattern, old, converted)
        code = module.code_for_node(node)
        rows.append(LiteralLine(start_line, start_column + 1, code, evidence.role.value, evidence.why))
    return sorted(rows, key=lambda row: (row.line, row.column))


def explain(path: str, data: bytes, tables: Tables, line: int | None = None) -> list[str]:
    """The report's lines: literals with roles, then findings with rules (only `line`'s when given)."""
    result = convert_source(path, data, tables)
    if result.reason:
        return [f"{path}: {result.status.value}: {result.reason}"]
    out = [f"{path}: {result.status.value}"]
    cells: CodeCells | None = None
    source = data
    if is_notebook(path):  # its code cells; a notebook of another language has none
        loaded = code_cells(path, data)
        cells, source = (loaded, loaded.source) if isinstance(loaded, CodeCells) else (None, b"")
    try:
        rows = [(r, *_where(r.line, cells)) for r in literal_roles(source, tables)] if source else []
    except cst.ParserSyntaxError:  # a form libcst reads only normalised (engine/conversion/normalise.py)
        rows = []
    rows = [row for row in rows if line is None or row[1] == line]
    out.append("string literals (role: evidence):" if rows else "no string literals here")
    for row, at, cell in rows:
        code = row.code if len(row.code) <= 60 else row.code[:57] + "..."
        out.append(f"  {at}:{row.column}  {code}  {row.role}: {row.why}{cell}")
    findings = [f for f in result.findings if line is None or f.start_line <= line <= f.end_line]
    out.append("rewrites and reports (rule):" if findings else "no rewrite or report here")
    for f in findings:
        heuristic = " (heuristic)" if f.heuristic else ""
        # the word the log gives it: an issue's status (PARTIAL, NO-EFFECT...), else the change's operation
        status = status_of(f)
        word = status.value.upper() if status is not None else f.operation.value
        out.append(f"  {f.start_line}:{f.column}  {f.rule_id} {word}{heuristic}  {f.message}")
    return out


def _where(line: int, cells: CodeCells | None) -> tuple[int, str]:
    """A line of the explained source as the user's file has it (a notebook's line and cell)."""
    return (line, "") if cells is None else cells.place(line)


def explain_target(
    target: str, rule_files: tuple[str, ...] = (), release: str | None = None, to: str = DEFAULT_TARGET
) -> list[str]:
    """`FILE` or `FILE:LINE` explained with the built-in rules of `--target to` (and `rule_files`);
    ValueError names the problem (a target `-v` cannot serve too)."""
    from ms_fmk_transplt import data as shipped
    from ms_fmk_transplt.ruleset import compile_rules, load_rules
    from ms_fmk_transplt.run import UsageError, check_target

    release = release or shipped.default_release()
    if release not in shipped.releases():
        raise ValueError(f"unknown release {release!r}; shipped: {', '.join(shipped.releases())}")
    try:
        check_target(to, release)
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    path, line = _file_and_line(target)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror or exc})") from None
    count = len(data.splitlines())
    if line is not None and not 1 <= line <= count:
        raise ValueError(
            f"{target}: line {line} is out of range ({path} has {count} line{'s' * (count != 1)})"
        )
    tables = compile_rules(load_rules(rule_files, target=to), release=release, target=to)
    return explain(str(path), data, _in_project(path, tables), line)


def _in_project(path: Path, tables: Tables) -> Tables:
    """The tables as a run of the current folder (else of the file's folder) sees `path`: its
    imports of that tree's own modules are no library's (engine/project/first_party.py)."""
    from ms_fmk_transplt.discover import discover, project_layout

    absolute = path.resolve()
    root = Path.cwd().resolve()
    if root not in absolute.parents:
        root = absolute.parent
    layout = project_layout(discover(root))
    view = layout.seen_from(absolute.relative_to(root).as_posix())
    return dataclasses.replace(tables, project=None, first_party=view)


def _file_and_line(target: str) -> tuple[Path, int | None]:
    """`FILE` (a file whose name holds colons included) or `FILE:LINE`; ValueError says what is wrong."""
    whole = Path(target)
    if whole.is_file():
        return whole, None
    name, colon, number = target.rpartition(":")
    path = Path(name) if colon and name else whole
    if path.is_dir() or whole.is_dir():
        folder = path if path.is_dir() else whole
        raise ValueError(f"{folder}: is a folder; explain takes one file: FILE or FILE:LINE")
    if not path.is_file() or path is whole:
        shown = name if colon and name and re.fullmatch(r"[0-9]+", number) else target
        raise ValueError(f"{shown}: no such file")
    if not re.fullmatch(r"[0-9]+", number):
        raise ValueError(f"{target}: the line {number!r} is not a number (FILE:LINE, LINE from 1)")
    return path, int(number)
