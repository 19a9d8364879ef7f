"""One walk of a module's statements with the standard library's `ast`, and how the project's
modules spell each other: what engine/project/project_devices.py (signatures) and engine/project/project_results.py
(uses of other modules' values) read, and the path arithmetic of imports (absolute and relative).
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterable, Iterator, Mapping

Use = tuple[str, "int | str"]  # (callee, position or keyword) a value is handed to
OWN = "::"  # `path::name`: a function or class of the same module


# fields that never hold a statement or expression: not walked
_LEAVES = frozenset({"ctx", "op", "id", "attr", "arg", "name", "module", "level", "asname", "kind"})
_FIELDS: dict[type, tuple[str, ...]] = {}
_KEPT = (
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Call,
    ast.Assign,
    ast.AnnAssign,
    ast.Compare,
    ast.Expr,
    ast.Return,
    ast.Match,
    ast.Import,
    ast.ImportFrom,
)


def _fields(cls: type) -> tuple[str, ...]:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(f for f in getattr(cls, "_fields", ()) if f not in _LEAVES)
    return found


def place(node: ast.expr) -> str | None:
    """The place a value is stored in or read from, as a module's variables are keyed: `dev`,
    `self.device`, `cfg.device`, `self.cfg.device`, `state['device']` (a chain of attributes and
    literal subscripts rooted at a name); None for anything else (`f().x`, `state[k]`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = place(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    if isinstance(node, ast.Subscript):
        index = node.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, (str, int)):
            inner = place(node.value)
            return None if inner is None else f"{inner}[{index.value!r}]"
    return None


class StatementNodes:
    """The calls, assignments, imports, comparisons, expression statements, returns and reads
    under one statement, from one walk (by hand: `ast.walk` costs twice as much)."""

    def __init__(self, statement: ast.AST) -> None:
        self.statement = statement
        self.calls: list[ast.Call] = []
        self.assigns: list[ast.Assign] = []
        self.annotated: list[ast.AnnAssign] = []  # `dev: str = pick()`
        self.imports: list[ast.Import | ast.ImportFrom] = []
        self.compares: list[ast.Compare] = []
        self.matches: list[ast.Match] = []
        self.statements: list[ast.Expr] = []
        self.returns: list[ast.Return] = []  # nested functions' too
        self.reads: list[ast.Name] = []
        self.places: list[ast.Attribute | ast.Subscript] = []  # `cfg.device`, `state["device"]` read
        kept: list[ast.AST] = []
        stack: list[ast.AST] = [statement]
        pop, push, keep, node_class = stack.pop, stack.append, kept.append, ast.AST
        while stack:
            node = pop()
            cls = node.__class__
            if cls in _KEPT:
                keep(node)
            for name in _FIELDS.get(cls) or _fields(cls):
                value = getattr(node, name, None)
                if value.__class__ is list:
                    for item in value:
                        if isinstance(item, node_class):
                            push(item)
                elif isinstance(value, node_class):
                    push(value)
        for node in kept:
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    self.reads.append(node)
            elif isinstance(node, (ast.Attribute, ast.Subscript)):
                if isinstance(node.ctx, ast.Load):
                    self.places.append(node)
            elif isinstance(node, ast.Call):
                self.calls.append(node)
            elif isinstance(node, ast.Assign):
                self.assigns.append(node)
            elif isinstance(node, ast.Compare):
                self.compares.append(node)
            elif isinstance(node, ast.Match):
                self.matches.append(node)
            elif isinstance(node, ast.Expr):
                self.statements.append(node)
            elif isinstance(node, ast.Return):
                self.returns.append(node)
            elif isinstance(node, ast.AnnAssign):
                self.annotated.append(node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.append(node)


def aliases(imports: Iterable[ast.Import | ast.ImportFrom]) -> dict[str, str]:
    """Bound name -> qualified name of the module's absolute imports (any scope)."""
    table: dict[str, str] = {}
    for node in imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    table[alias.asname] = alias.name
                else:
                    table[alias.name.split(".", 1)[0]] = alias.name.split(".", 1)[0]
        elif not node.level and node.module is not None:
            for alias in node.names:
                if alias.name != "*":
                    table[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif node.level:
            for alias in node.names:
                if alias.name != "*":
                    table[alias.asname or alias.name] = relative(node.level, node.module, alias.name)
    return table


def relative(level: int, module: str | None, name: str) -> str:
    """How a name a relative import binds is spelled as a callee: `..utils:move` for
    `from ..utils import move`, `.:helpers` for `from . import helpers` (resolved by `Reach`
    against the importing module's path)."""
    return "." * level + (module or "") + ":" + name


def join(folder: str, name: str) -> str:
    """A project path below `folder` ("" for the project's root)."""
    return f"{folder}/{name}" if folder else name


def module_paths(base: str) -> tuple[str, str]:
    """The two files a module at `base` may be: `base.py` and `base/__init__.py`."""
    return base + ".py", join(base, "__init__.py")


def _relative_base(origin: str, spelled: str) -> tuple[str, str]:
    """For a relative import spelled `..utils:rest` in the module at `origin`: the path of the
    module it names (`pkg/utils`), and `rest`."""
    dots = len(spelled) - len(spelled.lstrip("."))
    module, _, rest = spelled[dots:].partition(":")
    folder = posixpath.dirname(origin)
    for _ in range(dots - 1):
        folder = posixpath.dirname(folder)
    return (join(folder, module.replace(".", "/")) if module else folder), rest


def relative_files(files: frozenset[str], origin: str, spelled: str) -> list[str]:
    """The project's module files a relative import (`..utils:move`, `.:helpers`) in the module at
    `origin` may reach: the module it names, and the submodule its name may be."""
    base, name = _relative_base(origin, spelled)
    candidates = [*module_paths(base), *module_paths(join(base, name.split(".")[0]))]
    return [path for path in candidates if path in files]


def resolve_relative(files: frozenset[str], origin: str, callee: str) -> str | None:
    """`..utils:move.x` named in the module at `origin`: `"pkg/utils.py::move"` (a module's
    member), `"pkg/helpers.py::move"` for `.:helpers.move`; None when no project file matches."""
    base, rest = _relative_base(origin, callee)
    name, *attributes = rest.split(".")
    for path in module_paths(join(base, name)):  # from . import helpers
        if path in files:
            return f"{path}{OWN}{attributes[0]}" if len(attributes) == 1 else None
    for path in module_paths(base):
        if path in files:
            return f"{path}{OWN}{name}" if not attributes else None
    return None


def callee_of(func: ast.expr, names: Mapping[str, str]) -> str:
    """The callee as the module names it: qualified through its imports, `path::name` for its own
    function or class, else the method's or function's bare name (`to` of `batch.to`)."""
    parts: list[str] = []
    node = func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in names:
        return ".".join([names[node.id], *reversed(parts)])
    return parts[0] if parts else (node.id if isinstance(node, ast.Name) else "")


def choices(node: ast.expr) -> Iterator[ast.expr]:
    """The values an expression picks from: both branches of a ternary, the operands of `or`."""
    if isinstance(node, ast.IfExp):
        yield from choices(node.body)
        yield from choices(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from choices(value)
    else:
        yield node
