"""Convert one file's bytes: a pure function that never raises and returns a FileResult."""

from __future__ import annotations

import ast
import codecs
import dataclasses
import re
import traceback
import warnings
from typing import TypedDict

import libcst as cst

from ms_fmk_transplt.engine.conversion import embedded_scripts, fast_path
from ms_fmk_transplt.engine.conversion.normalise import (
    LONE_BACKSLASH,
    Normalised,
    libcst_limit,
    normalise,
    odd_tail,
    original_column,
    restore,
    same_tree,
)
from ms_fmk_transplt.engine.conversion.notebook import convert_notebook, is_notebook
from ms_fmk_transplt.engine.conversion.transformer import ModuleRewriter
from ms_fmk_transplt.engine.importing import add_needed_imports
from ms_fmk_transplt.engine.interface import Tables
from ms_fmk_transplt.engine.reporting import annotate
from ms_fmk_transplt.engine.syntax import (
    ModuleText,
    module_bytes,
    parse_module,
    positions_and_text,
    transform,
)
from ms_fmk_transplt.records import FileResult, Finding, Operation, Status, Support

_PY2_HINTS = (
    re.compile(rb"^\s*print\s+[^\s(=,.\[][^=]*$", re.M),
    re.compile(rb"^\s*except\s+[\w.]+\s*,\s*\w+\s*:", re.M),
    re.compile(rb"^\s*exec\s+['\"]", re.M),
    re.compile(rb"\bur['\"]"),
    re.compile(rb"^\s*raise\s+\w+\s*,", re.M),
)


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _decode_problem(data: bytes) -> str | None:
    """Why the bytes are not Python source text, or None when they decode (PEP 263 rules)."""
    nul = data.find(b"\0")
    if nul >= 0:
        return f"contains a NUL byte at offset {nul} (binary data, not Python source)"
    encoding, where = ("utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"), ""
    for number, line in enumerate(data.split(b"\n", 2)[:2], 1):
        match = _COOKIE.match(line)
        if match:
            encoding, where = match.group(1).decode("ascii"), f" declared at line {number}"
            break
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    try:
        codecs.lookup(encoding)
    except LookupError:
        return f"unknown source encoding {encoding!r}{where}"
    try:
        data.decode(encoding)
    except UnicodeDecodeError as exc:
        line_no = data.count(b"\n", 0, exc.start) + 1
        return f"bytes do not decode as {encoding}{where}: byte 0x{data[exc.start]:02x} at line {line_no}"
    return None


def _syntax_problem(data: bytes) -> ast.Module | str:
    """CPython's tree of the source, or why CPython rejects it (libcst accepts some Python 2 forms)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(data)
    except SyntaxError as exc:
        reason = f"syntax error at line {exc.lineno}: {exc.msg}"
        if any(p.search(data) for p in _PY2_HINTS):
            reason += " (looks like Python 2 code; convert it to Python 3 first)"
        return reason
    except (ValueError, MemoryError) as exc:
        return f"not parseable: {exc}"


def convert_source(path: str, data: bytes, tables: Tables, *, fast: bool = True) -> FileResult:
    """Convert one Python source (or a notebook's code cells); on any failure the result says why
    and carries no output.

    `fast`: a file no rewrite rule can touch is classified on CPython's ast (engine/conversion/fast_path.py);
    False sends every file through libcst (the fast path's equivalence test and bench compare them).
    """
    try:
        if is_notebook(path):  # its code cells, joined into one module (engine/conversion/notebook.py)
            return convert_notebook(path, data, lambda name, joined: _convert(name, joined, tables, fast))
        return _convert(path, data, tables, fast)
    except RecursionError:
        return FileResult(path, Status.FAILED, reason="source too deeply nested to convert")
    except Exception as exc:  # the engine's last line of defence: one bad file never stops a run
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return FileResult(
            path,
            Status.FAILED,
            reason=f"internal error {type(exc).__name__}: {exc} (at {tb.filename}:{tb.lineno})",
            detail="".join(traceback.format_exception(exc)).rstrip(),
        )


def _convert(path: str, data: bytes, tables: Tables, fast: bool) -> FileResult:
    result = _converted(path, data, tables.for_file(path), fast)
    if tables.advisor is None or result.status is Status.FAILED:
        return result
    # advice a rewrite of this run already followed (--opt-in affinity) is not given again
    applied = {
        (f.start_line, f.message.partition(" -> ")[2].split(" (")[0]) for f in result.findings if is_change(f)
    }
    advice = tuple(
        f
        for f in annotate(tables.advisor.advise(data), data)
        if (f.start_line, f.message.partition(" -> ")[2]) not in applied
    )
    if not advice:
        return result
    findings = sorted(
        (*result.findings, *advice), key=lambda f: (f.start_line, f.column, f.end_line, f.rule_id)
    )
    return dataclasses.replace(result, findings=tuple(findings))


def _converted(path: str, data: bytes, tables: Tables, fast: bool) -> FileResult:
    problem = _decode_problem(data)
    if problem:
        return FileResult(path, Status.FAILED, reason=problem)
    tree = _syntax_problem(data)
    if isinstance(tree, str):
        return FileResult(path, Status.FAILED, reason=tree)
    shell = embedded_scripts.could_hold(data, tables.text_hooks_for(embedded_scripts.SHELL_FILE))
    if not shell and not tables.could_match(data):
        return FileResult(path, Status.UNCHANGED)
    if fast and not shell and not tables.could_rewrite(data):
        result = fast_path.classify(path, data, tree, tables)
        if result is not None:
            return result
    del tree
    problem = ""
    normalised: Normalised | None = None
    try:
        module: cst.Module | None = parse_module(data)
        # libcst reads a backslash-only line into the wrong block and prints it back moved, and
        # drops some form feeds: those files must print back as read, or take the normalised path
        odd = b"\f" in data or LONE_BACKSLASH.search(data) or odd_tail(data)
        if odd and module is not None and module.bytes != data:
            module = None
    except cst.ParserSyntaxError as exc:
        module, problem = None, f"syntax error at line {exc.raw_line}: {exc.message}"
    if module is None:  # CPython took it (checked above): a form libcst's tokenizer mistakes
        normalised = normalise(data)
        module = _parse_normalised(normalised, data) if normalised is not None else None
        if module is None:
            reason = libcst_limit(data) or problem or "libcst does not print the file back as it read it"
            return FileResult(path, Status.FAILED, reason=f"{reason} (libcst; CPython parses it)")
    converter = ModuleRewriter(tables, module)
    try:
        return _rewritten(path, data, module, normalised, converter)
    finally:
        # the rewriter and its helpers refer to each other (bound methods, back references), and
        # through them to most of the tree: dropped now, the tree goes with the last reference to
        # it instead of waiting for a full collection of the cyclic garbage collector
        converter.close()


def _rewritten(
    path: str, data: bytes, module: cst.Module, normalised: Normalised | None, converter: ModuleRewriter
) -> FileResult:
    new_module = transform(module, converter)
    new_module = add_needed_imports(new_module, converter.import_statements.needed)
    placed, text = _place(module, converter)
    findings = annotate(in_original(placed, normalised), data)
    # every rewrite reports a change; without one the output is the input, not worth printing
    fresh: list[str] | None = None
    if normalised is not None:
        output = new_module.bytes
    elif edited(converter):
        output, fresh = module_bytes(module, new_module, text)
    else:
        output = data
    if output != data:
        broken = unparsable_output(output, fresh)
        if broken:
            return FileResult(
                path,
                Status.FAILED,
                reason=f"the converted file would not parse ({broken}), so it was not written: a converter"
                " defect, please report it",
            )
    if normalised is not None:
        restored = restore(normalised, output)
        if restored is None or not same_tree(restored, output):
            return FileResult(
                path,
                Status.FAILED,
                reason=f"{libcst_limit(data)}: converted as normalised, but the output could not be given"
                " back the original bytes line for line (libcst; CPython parses it)",
            )
        output = restored
    if output == data:
        return FileResult(path, Status.UNCHANGED, findings=findings, **counted(converter))
    return FileResult(path, Status.CONVERTED, findings=findings, output=output, **counted(converter))


def in_original(findings: tuple[Finding, ...], normalised: Normalised | None) -> tuple[Finding, ...]:
    """Findings placed on a normalised source, with the columns the user's file has (tabs, form feeds)."""
    if normalised is None:
        return findings
    return tuple(
        dataclasses.replace(f, column=original_column(normalised, f.start_line, f.column)) for f in findings
    )


def unparsable_output(output: bytes, fresh: list[str] | None) -> str | None:
    """Why the converter's output does not parse, if it does not: the input parsed, so only the
    statements printed afresh can be wrong (each is a top-level statement, complete on its own).

    compile() is the quick test (a third cheaper than ast.parse, which builds Python objects); what
    it rejects is asked of ast.parse, which alone judged the input (a module-level `await` compiles
    to an error but parses)."""
    for piece in [output] if fresh is None else fresh:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(piece, "<converted>", "exec", dont_inherit=True)
            continue
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass
        try:
            ast.parse(piece)
        except (SyntaxError, ValueError) as exc:
            if fresh is None:
                return f"syntax error at line {getattr(exc, 'lineno', '?')}: {getattr(exc, 'msg', exc)}"
            assert isinstance(piece, str)
            code = [
                line.strip()
                for line in piece.splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            ]
            return f"syntax error in the rewritten statement {code[0][:60]!r}: {getattr(exc, 'msg', exc)}"
        except RecursionError:
            continue  # too deep for CPython's parser here; the input was not, so leave the verdict to it
    return None


class Counted(TypedDict):
    """The API uses a file's result counts instead of listing them."""

    supported: int  # by a list
    supported_by_kernel: int  # by an NPU kernel alone


def counted(converter: ModuleRewriter) -> Counted:
    """The API uses counted, not listed: supported by a list, and by an NPU kernel alone."""
    return {"supported": converter.support.supported, "supported_by_kernel": converter.support.by_kernel}


def is_change(finding: Finding) -> bool:
    """A finding that rewrote code."""
    return finding.operation in (Operation.INSERT, Operation.MODIFY, Operation.DELETE)


def edited(converter: ModuleRewriter) -> bool:
    """Did the transform change anything? Every rewrite reports a MODIFY, INSERT or DELETE finding
    (tests/test_engine.py checks that an unedited module prints back as its input)."""
    return bool(converter.import_statements.needed) or any(
        item.operation not in (Operation.UNSUPPORTED, Operation.CHECK) for item in converter.pending
    )


def _parse_normalised(normalised: Normalised, data: bytes) -> cst.Module | None:
    """libcst's tree of the normalised source, when it parses and CPython sees the same program."""
    if not same_tree(normalised.data, data):
        return None
    try:
        module = parse_module(normalised.data)
    except cst.ParserSyntaxError:
        return None
    return module if module.bytes == normalised.data else None


def _place(module: cst.Module, converter: ModuleRewriter) -> tuple[tuple[Finding, ...], ModuleText | None]:
    """Original positions for the pending findings (engine/syntax/node_positions.py: only their nodes' ranges),
    and the module's text by top-level statement from that printing (None when nothing is pending)."""
    if not converter.pending:
        return (), None
    wanted = [item.node for item in converter.pending if item.node is not module]
    wanted += [item.related for item in converter.pending if item.related is not None]
    ranges, text = positions_and_text(module, wanted)
    lines: dict[int, tuple[int, int, int]] = {}
    for item in converter.pending:
        where = ranges.get(id(item.node))
        if where is not None:
            (start_line, start_column), (end_line, _) = where
            lines[id(item)] = (start_line, end_line, start_column + 1)
    # one finding per call site: a rule that reports an API by name outranks the list's verdict on it
    explicit = {
        (lines.get(id(item), (1,))[0], item.api)
        for item in converter.pending
        if item.api
        and not item.rule.support_list
        and (item.operation is Operation.UNSUPPORTED or item.support is not None)
    }
    findings = []
    for item in converter.pending:
        start, end, column = lines.get(id(item), (1, 1, 0))
        if item.rule.support_list and (start, item.api) in explicit:
            continue
        if item.line_offset:
            start, column = end, 0
        elif item.within:
            start = end = start + item.within
            column = 1
        unsupported = item.operation is Operation.UNSUPPORTED and not item.noop
        message = item.message
        if item.related is not None:  # "... at line {line}": the other node's original line
            message = message.replace("{line}", str(ranges.get(id(item.related), ((0, 0),))[0][0]))
        findings.append(
            Finding(
                item.rule.id,
                item.operation,
                start,
                end,
                message,
                item.heuristic,
                item.noop,
                column=column,
                api=item.api,
                support=item.support or (Support.UNSUPPORTED if unsupported else None),
                dtypes=item.dtypes,
                suggestion=item.suggestion,
                source=item.source,
            )
        )
    findings.sort(key=lambda f: (f.start_line, f.column, f.end_line, f.rule_id))
    return tuple(findings), text


def scan_text(path: str, data: bytes, tables: Tables) -> tuple[Finding, ...]:
    """Findings for a non-Python file that is copied as is: lines the text-scan rules report."""
    scans = tables.text_hooks_for(path)
    if not scans or b"\0" in data[:8192]:
        return ()
    text = data.decode("utf-8", errors="replace")
    findings = []
    for number, line in enumerate(text.splitlines(), 1):
        for scan in scans:
            finding = scan.scan_line(number, line)
            if finding is not None:
                findings.append(finding)
    return annotate(tuple(findings), data)
