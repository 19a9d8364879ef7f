"""Jupyter notebooks (`.ipynb`): the code cells converted as one module, everything else kept.

A notebook's cells share one namespace (`import torch` in the first cell, `torch.cuda` in the
fifth), so the code cells are joined, in order, into one module that the engine converts like a
file, and split back. What is not Python stays as written and is hidden from the engine behind
a placeholder line of its own: IPython's line magics and shell escapes (`%timeit ...`,
`!nvidia-smi`), help lines (`torch.cuda?`), and whole cells whose cell magic runs something else
(`%%bash`, `%%writefile`); `%%time`-like magics keep their Python body. A cell CPython cannot
parse is kept as written, and the others are converted.

Only the converted source lines of the JSON change: the notebook is re-encoded in the layout that
gives its text back line for line (Jupyter's indent of 1 and sorted keys, or another indent and
key order), and the lines the conversion changed are put into the original text. A notebook no
such layout matches (one line, say) is written in Jupyter's layout. A finding's line is the line of the
notebook's file holding that source line (the file viewed as text, as editors and diffs show
it), and its message names the cell and the line within it.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import json
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ms_fmk_transplt.records import FileResult, Finding, Status

SUFFIX = ".ipynb"

# cell magics whose body is Python run by the kernel
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_MAGIC_LINE = re.compile(r"^[ \t]*[%!]")
_HELP_LINE = re.compile(r"^[ \t]*[\w.]+\?\??[ \t]*$")
_MARK = "msft-nb"  # placeholders: `pass  # msft-nb-N`; cell starts: `# msft-nb-cell-N`


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


@dataclass
class _Joined:
    """The code cells joined into one module, and how to take it apart again."""

    text: list[str] = field(default_factory=list)  # the module's lines, with their newlines
    where: list[tuple[int, int]] = field(default_factory=list)  # per module line: (cell, line in cell)
    hidden: dict[str, str] = field(default_factory=dict)  # placeholder key -> the line it stands for
    kept: set[int] = field(default_factory=set)  # cells CPython rejects: left as written


@dataclass
class _Loaded:
    """A Python notebook read: its text, JSON, cells, and code cells joined into one module."""

    text: str
    notebook: dict[str, Any]
    cells: list[Any]
    sources: list[str | None]  # per cell: a code cell's source, else None
    joined: _Joined


def _load(path: str, data: bytes) -> FileResult | _Loaded:
    """The notebook read and its code cells joined; or the result that ends it there (not JSON,
    not Python)."""
    if not data.strip():
        return FileResult(path, Status.FAILED, reason="notebook is an empty file (not JSON)")
    try:
        text = data.decode("utf-8-sig")
        notebook = json.loads(text)
    except UnicodeDecodeError as exc:
        return FileResult(
            path, Status.FAILED, reason=f"notebook is not UTF-8 text (byte at offset {exc.start})"
        )
    except json.JSONDecodeError as exc:
        return FileResult(path, Status.FAILED, reason=f"notebook is not JSON: {exc.msg} at line {exc.lineno}")
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return FileResult(path, Status.FAILED, reason="notebook has no 'cells' list (nbformat 4 expected)")
    if not _language(notebook).startswith(("python", "ipython")):  # an R or Julia notebook
        return FileResult(path, Status.UNCHANGED)
    sources = [_source(cell) if _is_code(cell) else None for cell in cells]
    return _Loaded(text, notebook, cells, sources, _join(sources))


@dataclass(frozen=True)
class CodeCells:
    """A notebook's code cells as the one module the engine converts, and where its lines are."""

    source: bytes
    joined: _Joined
    lines: dict[tuple[int, int], int]

    def place(self, line: int) -> tuple[int, str]:
        """A line of the module: the notebook file's line holding it, and ` (cell N, line M)`."""
        return _position(self.joined, self.lines, line)


def code_cells(path: str, data: bytes) -> CodeCells | FileResult:
    """The notebook's code cells joined as the conversion joins them (for `explain`)."""
    loaded = _load(path, data)
    if isinstance(loaded, FileResult):
        return loaded
    layout = _layout(loaded.notebook, loaded.text)
    lines = _source_lines(loaded.notebook, loaded.sources, layout[0] if layout else None)
    return CodeCells("".join(loaded.joined.text).encode(), loaded.joined, lines)


def convert_notebook(path: str, data: bytes, convert: Callable[[str, bytes], FileResult]) -> FileResult:
    """Convert a notebook's code cells with `convert` (the engine's per-file conversion)."""
    loaded = _load(path, data)
    if isinstance(loaded, FileResult):
        return loaded
    text, notebook, cells = loaded.text, loaded.notebook, loaded.cells
    sources, joined = loaded.sources, loaded.joined
    result = convert(path, "".join(joined.text).encode())
    if result.status is Status.FAILED:
        return FileResult(path, Status.FAILED, reason=result.reason, detail=result.detail)
    new_sources = sources if result.output is None else _split(result.output.decode(), joined, sources)
    if new_sources is None:
        return FileResult(path, Status.FAILED, reason="converted cells could not be told apart again")
    if new_sources == sources and not result.findings:
        return result
    # the notebook's own layout, and its encoding in it: wanted for the findings' lines and the output
    layout, before = _layout(notebook, text) or (None, "")
    lines = _source_lines(notebook, sources, layout)
    findings = tuple(_placed(f, joined, lines) for f in result.findings)
    unchanged = dataclasses.replace(
        result, path=path, findings=findings, output=None, status=Status.UNCHANGED
    )
    if new_sources == sources:
        return unchanged
    for cell, old, new in zip(cells, sources, new_sources, strict=True):
        if old is not None and new is not None and new != old:
            cell["source"] = new.splitlines(keepends=True) if isinstance(cell["source"], list) else new
    output = _patched(text, before, notebook, layout) if layout else _dump(notebook, _JUPYTER)
    prefix = data[:3] if data.startswith(b"\xef\xbb\xbf") else b""
    return dataclasses.replace(unchanged, status=Status.CONVERTED, output=prefix + output.encode())


def _language(notebook: dict[str, Any]) -> str:
    metadata = notebook.get("metadata") or {}
    info = metadata.get("language_info") or {}
    spec = metadata.get("kernelspec") or {}
    name = info.get("name") or spec.get("language") or "python"  # unsaid: Jupyter's default kernel
    return name.lower() if isinstance(name, str) else "python"


def _is_code(cell: Any) -> bool:
    return isinstance(cell, dict) and cell.get("cell_type") == "code"


def _source(cell: dict[str, Any]) -> str | None:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return source if isinstance(source, str) else None


def _join(sources: list[str | None]) -> _Joined:
    joined = _Joined()
    for index, source in enumerate(sources):
        if source is None:
            continue
        joined.text.append(f"# {_MARK}-cell-{index}\n")
        joined.where.append((index, 0))
        lines = source.splitlines(keepends=True) or [""]
        hide_all = _foreign_cell(lines[0])
        # a cell that parses has no magic: `% value` may continue a line, `!` sit in a string
        plain = not hide_all and _syntax_error_line(source) is None
        for number, line in enumerate(lines):
            body = line.rstrip("\r\n")
            if not plain and (hide_all or _MAGIC_LINE.match(body) or _HELP_LINE.match(body)):
                key = f"{_MARK}-{len(joined.hidden)}"
                joined.hidden[key] = body
                indent = body[: len(body) - len(body.lstrip(" \t"))]
                body = f"{indent}pass  # {key}"
            joined.text.append(body + "\n")
            joined.where.append((index, number))
    # a cell CPython rejects is kept as written (its lines become `pass`), the rest still converts
    for _ in range(len(sources)):
        problem = _syntax_error_line("".join(joined.text))
        if problem is None:
            break
        cell = joined.where[min(problem, len(joined.where)) - 1][0]
        joined.kept.add(cell)
        for position, (owner, _) in enumerate(joined.where):
            if owner == cell and not joined.text[position].startswith(f"# {_MARK}-cell-"):
                joined.text[position] = "pass\n"
    return joined


def _foreign_cell(first: str) -> bool:
    """A cell magic that runs something other than Python (`%%bash`, `%%writefile x.py`)."""
    stripped = first.strip()
    if not stripped.startswith("%%"):
        return False
    name = stripped[2:].split(None, 1)[0] if len(stripped) > 2 else ""
    return name not in _PYTHON_CELL_MAGICS


def _syntax_error_line(source: str) -> int | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except SyntaxError as exc:
        return exc.lineno or 1
    except (ValueError, MemoryError):
        return 1
    return None


def _split(output: str, joined: _Joined, sources: list[str | None]) -> list[str | None] | None:
    """The converted module cut back into the cells, hidden lines restored."""
    parts: dict[int, list[str]] = {}
    current: list[str] | None = None
    start = re.compile(rf"^# {_MARK}-cell-(\d+)$")
    hidden = re.compile(rf"^[ \t]*pass  # ({_MARK}-\d+)$")
    for line in output.splitlines():
        begins = start.match(line)
        if begins:
            current = parts.setdefault(int(begins.group(1)), [])
            continue
        if current is None:  # an import the engine put above the first cell's start
            current = parts.setdefault(_first(sources), [])
        restored = hidden.match(line)
        current.append(joined.hidden[restored.group(1)] if restored else line)
    if set(parts) != {i for i, s in enumerate(sources) if s is not None}:
        return None
    new: list[str | None] = []
    for index, source in enumerate(sources):
        if source is None or index in joined.kept:
            new.append(source)
            continue
        text = "\n".join(parts[index])
        if text.rstrip("\n") == source.rstrip("\n"):
            new.append(source)  # unchanged; the join only added a last newline
        else:
            new.append(text + "\n" if source.endswith("\n") else text)
    return new


def _first(sources: list[str | None]) -> int:
    return next(i for i, s in enumerate(sources) if s is not None)


# ---- layout: the notebook's own JSON encoding, and where each source line sits in it


@dataclass(frozen=True)
class _Layout:
    indent: int
    sort_keys: bool
    ensure_ascii: bool
    newline: bool


_JUPYTER = _Layout(indent=1, sort_keys=True, ensure_ascii=False, newline=True)


def _dump(notebook: Any, layout: _Layout) -> str:
    text = json.dumps(
        notebook, indent=layout.indent, sort_keys=layout.sort_keys, ensure_ascii=layout.ensure_ascii
    )
    return text + "\n" if layout.newline else text


def _layout(notebook: Any, text: str) -> tuple[_Layout, str] | None:
    """The encoding that lays the notebook out line for line as its text, with that encoding:
    the one giving the text back, else the one differing on the fewest lines (an editor's
    `\\u001B` for Python's `\\u001b`, `1e-05` for `1e-5`); None when none keeps the lines."""
    lines = text.splitlines()
    best: tuple[int, _Layout, str] | None = None
    for indent in (1, 2, 4):
        for sort_keys in (True, False):
            for ensure_ascii in (False, True):
                for newline in (True, False):
                    layout = _Layout(indent, sort_keys, ensure_ascii, newline)
                    dumped = _dump(notebook, layout)
                    if dumped == text:
                        return layout, dumped
                    ours = dumped.splitlines()
                    if len(ours) == len(lines):
                        differ = sum(a != b for a, b in zip(ours, lines, strict=True))
                        if best is None or differ < best[0]:
                            best = (differ, layout, dumped)
    return (best[1], best[2]) if best else None


def _patched(text: str, before: str, notebook: Any, layout: _Layout) -> str:
    """The notebook's text with the lines its conversion changed replaced, and nothing else:
    `before` is the unconverted notebook in `layout`, line for line the text."""
    original, old, new = (
        text.splitlines(keepends=True),
        before.splitlines(),
        _dump(notebook, layout).splitlines(),
    )
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(original[i1:i2])
        else:
            out.extend(line + "\n" for line in new[j1:j2])
    result = "".join(out)
    if not text.endswith("\n") and result.endswith("\n"):
        result = result[:-1]
    return result


def _source_lines(
    notebook: dict[str, Any], sources: list[str | None], layout: _Layout | None
) -> dict[tuple[int, int], int]:
    """(cell, line in cell) -> line of the notebook's file, found by encoding the notebook with
    each source line replaced by a marker (the same layout puts each in the same place)."""
    if layout is None:
        return {}
    cells = [dict(cell) if isinstance(cell, dict) else cell for cell in notebook["cells"]]
    marked = dict(notebook, cells=cells)  # a copy of the cells only: outputs are shared, not copied
    for index, source in enumerate(sources):
        if source is None:
            continue
        count = len(source.splitlines()) or 1
        cell = cells[index]
        if isinstance(cell["source"], list):
            cell["source"] = [f"\0{_MARK}:{index}:{n}" for n in range(count)]
        else:
            cell["source"] = f"\0{_MARK}:{index}:0"  # a one-string source sits on one line
    found: dict[tuple[int, int], int] = {}
    marker = re.compile(r"\\u0000" + re.escape(_MARK) + r":(\d+):(\d+)")
    for number, line in enumerate(_dump(marked, layout).splitlines(), 1):
        match = marker.search(line)
        if match:
            found[(int(match.group(1)), int(match.group(2)))] = number
    return found


def _position(joined: _Joined, lines: dict[tuple[int, int], int], line: int) -> tuple[int, str]:
    """A line of the joined module: the notebook file's line holding it, and ` (cell N, line M)`."""
    cell, number = joined.where[min(max(line, 1), len(joined.where)) - 1]
    file_line = lines.get((cell, number)) or lines.get((cell, 0)) or 1
    return file_line, f" (cell {cell + 1}, line {number + 1})"


def _placed(finding: Finding, joined: _Joined, lines: dict[tuple[int, int], int]) -> Finding:
    """The finding at its notebook position: the file's line, and the cell and line in its text."""
    start, where = _position(joined, lines, finding.start_line)
    end_cell, end_number = joined.where[min(max(finding.end_line, 1), len(joined.where)) - 1]
    end = lines.get((end_cell, end_number)) or start
    return dataclasses.replace(
        finding, start_line=start, end_line=max(end, start), message=finding.message + where
    )
