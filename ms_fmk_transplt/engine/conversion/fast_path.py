"""Files no rewrite rule can touch: their API uses classified on CPython's `ast`, without libcst.

Most files of a real project use torch without any CUDA API (timm: 190 of 196 come out
unchanged), yet every torch use must be classified against the release's support lists. The
libcst parse and traversal cost several times the `ast` parse that every file already gets
(engine/conversion/convert.py checks the syntax with it). The rules split in two by what they match:

- rules that match text (device strings, environment variables, entry points) leave trigger
  words; a file holding one goes to libcst (`Tables.could_rewrite`);
- rules that act on names (renames, call hooks, result uses, map_location, ...) leave trigger
  names (`Tables.trigger_names`); this module sees every name the file uses, resolved through
  its imports and module aliases as the transformer resolves them, and a file that uses one (a
  qualified name under a dotted trigger name, or the identifier of a single-word one) goes to
  libcst after all (`classify` returns None);
- rules that act on API paths spelled in a call's strings (`mock.patch("torch.cuda.x")`) name
  those calls (`Tables.path_string_calls`); a string argument of such a call that spells a path
  some rule acts on, from any of its segments, sends the file to libcst.

What is left holds no finding but the classifier's, read here as the transformer reads it:

- a Name or the outermost node of a dotted chain is one use; the inner parts are not;
- a use is invoked when it is called, decorates or is a base class; annotations hold no uses,
  nor do bare string statements;
- `x.method()` on something not resolved is a tensor method in a file that imports torch,
  unless the receiver is a literal or a class of the file defines the method (`self.method()`);
- positions are libcst's: 1-based character columns, inner nodes before the chains holding them.

A file naming the NPU goes to libcst: it may keep a device dispatch's alternatives as written,
with no classification inside them (engine/devices/dispatch_sites.py). A file goes to libcst also where
the two trees could disagree: a finding inside an f-string (3.11's `ast` positions there are not
reliable), a name that `ast` keeps as a bare string (`global nn`, `except ... as F`, match
captures) resolving to a torch API. tests/test_fast_path.py
proves the result equal to libcst's on every fixture, and `bench/fast_path.py` on whole corpora.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from ms_fmk_transplt.engine.interface import METHODS, Tables
from ms_fmk_transplt.engine.reporting import (
    CASTS,
    DTYPE_WORDS,
    HOST_METHODS,
    INDEX_DTYPES,
    MOVE_METHODS,
    SupportJudge,
    annotate,
    join_clauses,
    operation_of,
)
from ms_fmk_transplt.records import FileResult, Finding, Status

# receivers that are never tensors: "a,b".split(",") is str.split (libcst's literal nodes)
_LITERALS = (ast.JoinedStr, ast.List, ast.Dict, ast.Tuple, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
_TORCH = ("torch.", "torch_npu.")


class _Fallback(Exception):
    """The file needs libcst after all."""


def classify(path: str, data: bytes, tree: ast.Module, tables: Tables) -> FileResult | None:
    """The file's result when nothing in it is rewritten, or None when it must take libcst's path."""
    if any(_names(word, data) for word in tables.dispatch_words):
        return None  # it may keep a device dispatch's alternatives, unclassified (engine/devices/dispatch_sites.py)
    try:
        scan = _Scan(tables, tree, data)
        findings = scan.run()
    except _Fallback:
        return None
    findings.sort(key=lambda pair: pair[0])
    return FileResult(
        path,
        Status.UNCHANGED,
        findings=annotate(tuple(finding for _, finding in findings), data),
        supported=scan.verdicts.supported,
        supported_by_kernel=scan.verdicts.by_kernel,
    )


def _names(word: str, data: bytes) -> bool:
    """`word` in `data` not inside a longer word (`is_npu`, `"npu:0"`, `FORCE_NPU`; not `input`)."""
    return (
        re.search(rb"(?<![A-Za-z])" + re.escape(word.encode()) + rb"(?![A-Za-z])", data, re.IGNORECASE)
        is not None
    )


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a Name/Attribute chain, None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def alias_table(imports: list[ast.Import | ast.ImportFrom]) -> dict[str, str]:
    """Bound name -> qualified name for every unambiguous import (engine/names.alias_table on ast)."""
    table: dict[str, str] = {}
    ambiguous: set[str] = set()
    for statement in imports:
        for bound, qualified in _bindings(statement):
            previous = table.get(bound)
            if previous is not None and previous != qualified:
                ambiguous.add(bound)
            table[bound] = qualified
    for name in ambiguous:
        del table[name]
    return table


def _bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname is not None:
                yield alias.asname, alias.name
            else:
                root = alias.name.split(".", 1)[0]
                yield root, root
        return
    if node.level or node.module is None:
        return
    for alias in node.names:
        if alias.name == "*":
            return
        yield alias.asname or alias.name, f"{node.module}.{alias.name}"


def assignment_aliases(assigns: list[ast.Assign], aliases: dict[str, str], modules: Tables) -> dict[str, str]:
    """The alias table after the file's own assignments (engine/names.assignment_aliases on ast)."""
    known = set(aliases.values()) | modules.member_modules()
    made: dict[str, str | None] = {}
    for assign in assigns:
        value = assign.value
        resolved = None
        if isinstance(value, (ast.Name, ast.Attribute)):
            head, _, rest = (dotted(value) or "").partition(".")
            if head in aliases:
                resolved = aliases[head] + ("." + rest if rest else "")
        if resolved not in known:
            resolved = None
        for target in assign.targets:
            if not isinstance(target, ast.Name):
                continue
            name = target.id
            if isinstance(value, ast.Constant) and value.value is None and name in aliases:
                continue
            made[name] = resolved if name not in made or made[name] == resolved else None
    result = dict(aliases)
    for name, qualified in made.items():
        if qualified is not None:
            result[name] = qualified
        elif name in aliases:
            del result[name]
    return result


# per node class: its child fields, each with whether it is an annotation (names there are not uses)
_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _fields(cls: type[ast.AST]) -> tuple[tuple[str, bool], ...]:
    fields = _FIELDS[cls] = tuple((f, f in ("annotation", "returns")) for f in cls._fields if f != "ctx")
    return fields


class _Scan:
    """One file's API uses, classified; `run` returns (sort key, finding) pairs.

    The tree is walked once: the look-ahead (imports, assignments, calls, ...) from every node, and
    the uses `run` classifies listed in the order it classifies them. Two walks (`ast.walk` and
    `ast.iter_fields`, generators per node) were most of the fast path's time: ~55 % of timm's."""

    def __init__(self, tables: Tables, tree: ast.Module, data: bytes) -> None:
        self.tables = tables
        self.lines = data.splitlines()
        self.verdicts = SupportJudge(tables)
        imports: list[ast.Import | ast.ImportFrom] = []
        assigns: list[ast.Assign] = []
        classes: list[ast.ClassDef] = []
        self.inner: set[int] = set()  # the `a.b` of `a.b.c`: looked up whole, at the outermost node
        self.calls: dict[int, ast.Call] = {}  # id(func) -> its call
        self.invoked: set[int] = set()  # called, decorating, subclassed
        bare: list[str] = []  # names ast keeps as strings where libcst has a Name
        # (node, inside an f-string, inside an annotation) of the Names, Attributes and Calls `run`
        # reads, in a depth-first order, last child first; not those of a bare string statement
        self.uses: list[tuple[Any, bool, bool]] = []
        uses = self.uses.append
        # (node, inside an f-string, inside an annotation, inside a bare string statement)
        stack: list[tuple[Any, bool, bool, bool]] = [(tree, False, False, False)]
        pop, push = stack.pop, stack.append
        fields = _FIELDS
        while stack:
            node, in_fstring, in_annotation, prose = pop()
            kind = node.__class__
            if kind is ast.Name:
                if not prose:
                    uses((node, in_fstring, in_annotation))
            elif kind is ast.Attribute:
                if isinstance(node.value, (ast.Name, ast.Attribute)):
                    self.inner.add(id(node.value))
                if not prose:
                    uses((node, in_fstring, in_annotation))
            elif kind is ast.Call:
                self.calls[id(node.func)] = node
                self.invoked.add(id(node.func))
                if not prose:
                    uses((node, in_fstring, in_annotation))
            elif kind is ast.Expr:
                prose = prose or _is_text(node.value)  # a docstring or bare string: prose
            elif kind is ast.JoinedStr:
                in_fstring = True
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                self.invoked.update(id(d) for d in node.decorator_list)
            elif kind is ast.ClassDef:
                classes.append(node)
                self.invoked.update(id(d) for d in node.decorator_list)
                self.invoked.update(id(b.value if isinstance(b, ast.Starred) else b) for b in node.bases)
            elif kind is ast.Import or kind is ast.ImportFrom:
                imports.append(node)
            elif kind is ast.Assign:
                assigns.append(node)
            elif kind is ast.Global or kind is ast.Nonlocal:
                bare += node.names
            elif kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
                bare += [node.name] if node.name else []
            elif kind is ast.MatchMapping:
                bare += [node.rest] if node.rest else []
            elif kind is ast.MatchClass:
                bare += node.kwd_attrs
            for field, annotation in fields.get(kind) or _fields(kind):
                value = getattr(node, field, None)
                if value is None:
                    continue
                inner = in_annotation or annotation
                if isinstance(value, list):
                    for item in value:
                        if isinstance(item, ast.AST):
                            push((item, in_fstring, inner, prose))
                elif isinstance(value, ast.AST):
                    push((value, in_fstring, inner, prose))
        self.dotted_triggers = {n for n in tables.trigger_names if "." in n}
        self.word_triggers = {n for n in tables.trigger_names if "." not in n}
        self.aliases = assignment_aliases(assigns, alias_table(imports), tables)
        if any(self.aliases.get(name, "").startswith(_TORCH) for name in bare):
            raise _Fallback
        for name in self.aliases.values():
            self._check(name)
        for statement in imports:  # `import torch.cuda`, `from torch.cuda import amp`: renamed imports
            if isinstance(statement, ast.Import):
                for alias in statement.names:
                    self._check(alias.name)
            elif statement.module and not statement.level:
                self._check(statement.module)
                for alias in statement.names:
                    self._check(f"{statement.module}.{alias.name}")
        self.imports_torch = any(
            q == root or q.startswith(root + ".")
            for q in self.aliases.values()
            for root in ("torch", "torch_npu")
        )
        self.own_methods: dict[str, set[str]] = {}
        if tables.hooks.keyed(METHODS):
            for cls in classes:
                for member in cls.body:
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.own_methods.setdefault(member.name, set()).add(cls.name)
        self.found: list[tuple[tuple[int, int, int, str, int, int], Finding]] = []

    def _check(self, name: str) -> None:
        """A qualified name some rule acts on (itself or a name above it) sends the file to libcst."""
        triggers = self.dotted_triggers
        if name in triggers or name.partition(".")[0] in self.word_triggers:
            raise _Fallback
        if self.tables.lookup(name) is not None:
            raise _Fallback
        end = name.rfind(".")
        while end > 0:
            if name[:end] in triggers:
                raise _Fallback
            end = name.rfind(".", 0, end)

    def qualify(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualify(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def run(self) -> list[tuple[tuple[int, int, int, str, int, int], Finding]]:
        words = self.word_triggers
        inner = self.inner
        for node, in_fstring, in_annotation in self.uses:
            kind = node.__class__
            if kind is ast.Name:
                if node.id in words:
                    raise _Fallback
                if id(node) not in inner:
                    self._name(node, in_fstring, in_annotation)
            elif kind is ast.Attribute:
                if node.attr in words:
                    raise _Fallback
                if id(node) not in inner:
                    self._attribute(node, in_fstring, in_annotation)
            else:
                self._call(node, in_fstring, in_annotation)
        return self.found

    # ---- the transformer's leave_Name / leave_Attribute / leave_Call, for classification only ----
    def _name(self, node: ast.Name, in_fstring: bool, in_annotation: bool) -> None:
        qualified = self.aliases.get(node.id)
        if qualified is not None:
            self._check(qualified)
            if qualified.startswith(_TORCH) and not in_annotation:
                self._classify(node, qualified, in_fstring)

    def _attribute(self, node: ast.Attribute, in_fstring: bool, in_annotation: bool) -> None:
        name = self.qualify(node)
        if name:
            self._check(name)
            if not in_annotation:
                self._classify(node, name, in_fstring)

    def _call(self, node: ast.Call, in_fstring: bool, in_annotation: bool) -> None:
        tables = self.tables
        func = node.func
        short = (
            func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        )
        if short in tables.device_spec.attribute_name_calls and len(node.args) > 1:
            self._name_by_string(node.args[0], node.args[1])
        if short in tables.path_string_calls or (
            tables.path_string_calls and self.qualify(func) in tables.path_string_calls
        ):
            self._path_strings(node)
        if in_annotation or not self.imports_torch or not isinstance(func, ast.Attribute):
            return
        if self.qualify(func) is None:
            method = func.attr
            own = self._own_method(func)
            host = _on_host(func.value)
            if not own and self.verdicts.lists_method(method) and not _literal(func.value) and not host:
                self._classify(node, f"torch.Tensor.{method}", in_fstring, heuristic=True)

    def _name_by_string(self, owner: ast.expr, attr: ast.expr) -> None:
        """`getattr(torch, "cuda")` spells a name a rule rewrites: libcst's path reports it."""
        owner = owner.value if isinstance(owner, ast.Starred) else owner
        base = self.qualify(owner)
        if base and isinstance(attr, ast.Constant) and isinstance(attr.value, str):
            self._check(f"{base}.{attr.value}")

    def _path_strings(self, call: ast.Call) -> None:
        """`mock.patch("torch.cuda.device_count")`: an API path spelled in a string argument, from
        any of its segments on, that a rule acts on sends the file to libcst."""
        values = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
        values += [k.value for k in call.keywords]
        for value in values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and "." in value.value:
                parts = value.value.split(".")
                for start in range(len(parts)):
                    self._check(".".join(parts[start:]))

    def _own_method(self, func: ast.Attribute) -> bool:
        owners = self.own_methods.get(func.attr)
        if not owners:
            return False
        receiver = func.value
        if isinstance(receiver, ast.Name):
            return receiver.id in ("self", "cls")
        return (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id in owners
        )

    def _classify(self, node: ast.expr, name: str, in_fstring: bool, heuristic: bool = False) -> None:
        invoked = id(node) in self.invoked or isinstance(node, ast.Call)
        verdict = self.verdicts.judge(name, invoked, lambda dtypes: self._dtype_shown(node, dtypes))
        if verdict is None:
            return
        if in_fstring:
            raise _Fallback
        line, column = node.lineno, self._column(node.lineno, node.col_offset)
        end_line = node.end_lineno or line
        end_column = self._column(end_line, node.end_col_offset or 0)
        finding = Finding(
            verdict.rule.id,
            operation_of(verdict),
            line,
            end_line,
            join_clauses(verdict.message, verdict.suggestion),
            heuristic,
            column=column + 1,
            api=name,
            support=verdict.support,
            dtypes=verdict.dtypes,
            suggestion=verdict.suggestion,
            source=verdict.source,
        )
        # libcst's order: by start, end line and rule, then the inner node (left first) before its chain
        self.found.append(((line, column, end_line, verdict.rule.id, end_line, end_column), finding))

    def _column(self, line: int, offset: int) -> int:
        """ast's UTF-8 byte offset as libcst's character column."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else b""
        head = text[:offset]
        return offset if head.isascii() else len(head.decode("utf-8", errors="replace"))

    # ---- dtypes the code shows (SupportClassifier._dtype_shown on ast) --------------------------
    def _dtype_shown(self, node: ast.expr, dtypes: str) -> str | None:
        call = node if isinstance(node, ast.Call) else self.calls.get(id(node))
        if call is None:
            return None
        allowed = set(dtypes.split())
        shown: list[str] = []
        arguments: list[tuple[str | None, ast.expr]] = [
            (None, a.value if isinstance(a, ast.Starred) else a) for a in call.args
        ]
        arguments += [(k.arg, k.value) for k in call.keywords]
        arguments.sort(key=lambda pair: (pair[1].lineno, pair[1].col_offset))  # source order, as libcst
        for keyword, value in arguments:
            if keyword in (None, "dtype"):
                word = self._dtype_word(value)
                if word is not None and (keyword == "dtype" or _is_cast(call)):
                    shown.append(word)
            if keyword is None and isinstance(value, ast.Call):
                shown += [w for w in self._cast_to(value) if w not in INDEX_DTYPES]
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            shown += self._cast_to(func.value)
        outside = [word for word in shown if word not in allowed]
        return outside[0] if outside else None

    def _cast_to(self, call: ast.Call) -> list[str]:
        if not isinstance(call.func, ast.Attribute):
            return []
        cast = CASTS.get(call.func.attr)
        if cast is not None and not call.args and not call.keywords:
            return [cast]
        if _is_cast(call):
            values = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
            values += [k.value for k in call.keywords]
            values.sort(key=lambda v: (v.lineno, v.col_offset))
            return [w for v in values if (w := self._dtype_word(v)) is not None]
        return []

    def _dtype_word(self, expr: ast.expr) -> str | None:
        name = self.qualify(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        if name is None or not name.startswith("torch."):
            return None
        return DTYPE_WORDS.get(name[len("torch.") :])


def _on_host(receiver: ast.expr) -> bool:
    """support.on_host on ast: the receiver's last move is to the CPU."""
    node = receiver
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            return False
        method = node.func.attr
        if method in HOST_METHODS:
            return True
        if method in MOVE_METHODS:
            targets = [a for a in node.args if not isinstance(a, ast.Starred)][:1]
            targets += [k.value for k in node.keywords if k.arg == "device"]
            target = min(targets, key=lambda v: (v.lineno, v.col_offset)) if targets else None
            if method == "to" and isinstance(target, ast.Constant) and isinstance(target.value, (str, bytes)):
                return isinstance(target.value, str) and target.value.split(":")[0] == "cpu"
            if not (method == "to" and isinstance(target, ast.Attribute) and target.attr in DTYPE_WORDS):
                return False
        node = node.func.value


def _is_cast(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "type")


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )


def _literal(node: ast.expr) -> bool:
    """libcst's literal receivers: strings, bytes, numbers (not True/False/None/complex), displays."""
    if isinstance(node, ast.Constant):
        value = node.value
        return isinstance(value, (str, bytes, float)) or (
            isinstance(value, int) and not isinstance(value, bool)
        )
    return isinstance(node, _LITERALS)
