"""Which parameters of the project's own functions and classes a value reaches a device API through.

A `"cuda"` that a module hands to the project's own helper (`move(x, "cuda")`, `Runner(model,
"cuda")`, `Config(accel="cuda")`) is a device when the helper hands that parameter on to an API
that takes one, wherever the helper lives. Each file converts alone, so what the project's other
modules do with their parameters is gathered once per run, with the input tree
(engine/first_party.py's `ProjectLayout`), by the standard library's `ast` (no libcst): per module,
each top-level function's and class's parameters and what each is handed to (`Use`: the callee as
the module names it, and the position or keyword). Whether a use takes a device is the rule data's
answer (`device_context` of TP103: `calls`, `keywords`), asked when a file converts; a use handing
the parameter to another function of the project is followed there (`Reach`), across modules.

- **A function** `def move(batch, target): return batch.to(target)`: its parameters in order.
- **An enum** (`class TimerType(Enum)`): `TimerType("cuda")` in another module looks up a member
  by its value, a label like the member (engine/context.py keeps the enum's own members).
- **A class**: its `__init__`'s parameters, each also reaching what the attribute it is stored in
  reaches in any method (`self.where = where` ... `x.to(self.where)`); a class without `__init__`
  (a dataclass) takes its annotated fields in order (`accel: str = "cuda"`, a property returning
  `torch.device(self.accel)`).
- Imports absolute or relative (`from .helpers import move`, `from . import helpers`).
- Not followed: methods called on an instance (its class is not known), `*args` / `**kwargs`,
  values a helper returns (`def pick(): return "cuda"` used by `.to(pick())` in another module).
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

Use = tuple[str, "int | str"]  # (callee, position or keyword) a parameter is handed to
_RECEIVERS = ("self", "cls")
_OWN = "::"  # `path::name`: a function or class of the same module
_DEPTH = 4  # helpers handing a value on to helpers: how far it is followed


@dataclass(frozen=True)
class Signature:
    """A callable of the project: its positional parameters and what each parameter is handed to."""

    params: tuple[str, ...]
    uses: tuple[tuple[str, tuple[Use, ...]], ...]  # parameter -> its uses (keyword-only ones too)
    enum: bool = False  # an Enum: `TimerType("cuda")` looks up a member by its value, a label

    def param(self, slot: int | str) -> str | None:
        """The parameter an argument at position `slot` (or with keyword `slot`) binds."""
        if isinstance(slot, int):
            return self.params[slot] if slot < len(self.params) else None
        return slot if any(name == slot for name, _ in self.uses) or slot in self.params else None

    def uses_of(self, param: str) -> tuple[Use, ...]:
        return next((uses for name, uses in self.uses if name == param), ())


ModuleSignatures = Mapping[str, Signature]  # top-level name -> signature


@dataclass(frozen=True)
class ModuleFacts:
    """What one module tells the others: its signatures, and the names it imports (absolute:
    `pkg.helpers.move`, `pkg.helpers`), which say whose signatures its own conversion reads."""

    signatures: dict[str, Signature]
    imports: tuple[str, ...] = ()


def scan_source(source: bytes, path: str) -> ModuleFacts:
    """The signatures of a module's top-level functions and classes whose parameters are handed on,
    and its imports (none for a file that does not parse). One walk of each top-level statement."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ModuleFacts({})
    # a class is walked method by method (`_class`), and here only for the imports in its methods
    lines = source.split(b"\n")
    walked = [
        (s, _Walked(s if not isinstance(s, ast.ClassDef) or _importing(s, lines) else None))
        for s in tree.body
    ]
    names = _aliases(node for _, w in walked for node in w.imports)
    imports = tuple(
        sorted(
            {
                *names.values(),
                *(
                    n.module
                    for _, w in walked
                    for n in w.imports
                    if isinstance(n, ast.ImportFrom) and n.module and not n.level
                ),
            }
        )
    )
    for statement, _ in walked:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[statement.name] = f"{path}{_OWN}{statement.name}"
    found: dict[str, Signature] = {}
    for statement, w in walked:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            signature: Signature | None = _function(statement, w, names) if _params(statement) else None
        elif isinstance(statement, ast.ClassDef):
            signature = _class(statement, names)
        else:
            continue
        if signature is not None and (signature.enum or any(uses for _, uses in signature.uses)):
            found[statement.name] = signature
    return ModuleFacts(found, imports)


def _importing(statement: ast.stmt, lines: list[bytes]) -> bool:
    """Does the statement's text hold an import (`import x` in a method: the module depends on x)?"""
    end = statement.end_lineno or statement.lineno
    return any(b"import" in line for line in lines[statement.lineno - 1 : end])


class _Walked:
    """The calls, assignments and imports under one statement, from one walk."""

    def __init__(self, statement: ast.AST | None) -> None:
        self.calls: list[ast.Call] = []
        self.assigns: list[ast.Assign] = []
        self.imports: list[ast.Import | ast.ImportFrom] = []
        for node in ast.walk(statement) if statement is not None else ():
            if isinstance(node, ast.Call):
                self.calls.append(node)
            elif isinstance(node, ast.Assign):
                self.assigns.append(node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.append(node)


def _aliases(imports: Iterable[ast.Import | ast.ImportFrom]) -> dict[str, str]:
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
            return f"{path}{_OWN}{attributes[0]}" if len(attributes) == 1 else None
    for path in module_paths(base):
        if path in files:
            return f"{path}{_OWN}{name}" if not attributes else None
    return None


def _callee(func: ast.expr, names: Mapping[str, str]) -> str:
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


def _choices(node: ast.expr) -> Iterator[ast.expr]:
    """The values an expression picks from: both branches of a ternary, the operands of `or`."""
    if isinstance(node, ast.IfExp):
        yield from _choices(node.body)
        yield from _choices(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _choices(value)
    else:
        yield node


def _handed(
    calls: Iterable[ast.Call], key: Callable[[ast.expr], str | None], names: Mapping[str, str]
) -> dict[str, set[Use]]:
    """What each value `key` names (a parameter, an attribute) is handed to by these calls."""
    found: dict[str, set[Use]] = {}
    for call in calls:
        slots: list[tuple[int | str, ast.expr]] = []
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            slots.append((index, arg))
        slots += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        for slot, value in slots:
            for choice in _choices(value):
                name = key(choice)
                if name is not None:
                    found.setdefault(name, set()).add((_callee(call.func, names), slot))
    return found


def _param_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[str], list[str]]:
    """(positional parameters as a call passes them, keyword-only ones)."""
    positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    if positional and positional[0] in _RECEIVERS:
        positional = positional[1:]
    return positional, [a.arg for a in function.args.kwonlyargs]


def _attribute(node: ast.expr) -> str | None:
    """`X` of `self.X` / `cls.X`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in _RECEIVERS:
        return node.attr
    return None


def _signature(params: list[str], keyword_only: list[str], handed: dict[str, set[Use]]) -> Signature:
    uses = tuple((p, tuple(sorted(handed[p], key=repr))) for p in (*params, *keyword_only) if p in handed)
    return Signature(tuple(params), uses)


def _function(
    function: ast.FunctionDef | ast.AsyncFunctionDef, walked: _Walked, names: Mapping[str, str]
) -> Signature:
    positional, keyword_only = _param_names(function)
    wanted = {*positional, *keyword_only}
    return _signature(positional, keyword_only, _handed(walked.calls, _param(wanted), names))


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Does the function take a parameter besides its receiver?"""
    positional, keyword_only = _param_names(function)
    return bool(positional or keyword_only)


def _param(wanted: set[str]) -> Callable[[ast.expr], str | None]:
    return lambda node: node.id if isinstance(node, ast.Name) and node.id in wanted else None


def _class(cls: ast.ClassDef, names: Mapping[str, str]) -> Signature | None:
    if any(_callee(b, {}).endswith("Enum") for b in cls.bases):
        return Signature((), (), enum=True)
    functions = [s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    init = next((f for f in functions if f.name == "__init__"), None)
    fields = [
        s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    ]
    if (init is None and not fields) or (init is not None and not _params(init)):
        return None  # nothing a caller hands it: its methods are not walked
    methods = {f.name: (f, _Walked(f)) for f in functions}
    # attribute -> what it is handed to, in any method
    through = _handed((c for _, w in methods.values() for c in w.calls), _attribute, names)
    if "__init__" not in methods:  # a dataclass: its annotated fields, in order
        return _signature(fields, [], through)
    init, walked = methods["__init__"]
    positional, keyword_only = _param_names(init)
    wanted = {*positional, *keyword_only}
    handed = _handed(walked.calls, _param(wanted), names)
    for assign in walked.assigns:  # self.where = where: the parameter reaches what the attribute does
        for target in assign.targets:
            attribute = _attribute(target)
            for choice in _choices(assign.value) if attribute in through else ():
                if isinstance(choice, ast.Name) and choice.id in wanted:
                    handed.setdefault(choice.id, set()).update(through[attribute or ""])
    return _signature(positional, keyword_only, handed)


class Reach:
    """Does a value handed to the project's own callable reach a device API? (one file's view)"""

    def __init__(
        self,
        files: frozenset[str],
        signatures: Mapping[str, ModuleSignatures],
        module_of: Callable[[str], tuple[str, str] | None],
        takes_device: Callable[[str, int | str], str | None],
    ) -> None:
        self.files = files  # the project's modules
        self.signatures = signatures  # module path -> its signatures
        self.module_of = module_of  # qualified name -> (module path, member) of the project
        self.takes_device = takes_device  # (callee, slot) -> the device API's name, else None

    def signature(self, callee: str, origin: str = "") -> tuple[str, Signature] | None:
        """The project's callable a qualified name, a `path::name` or a relative spelling
        (`..utils:move`, named in the module at `origin`) names, with its module's path."""
        if callee.startswith("."):
            callee = resolve_relative(self.files, origin, callee) or ""
        path, own, member = callee.partition(_OWN)
        if not own:
            found = self.module_of(callee) if callee else None
            if found is None:
                return None
            path, member = found
        signature = self.signatures.get(path, {}).get(member)
        return None if signature is None else (path, signature)

    def reaches(self, callee: str, slot: int | str, origin: str = "", depth: int = _DEPTH) -> str | None:
        """The device API an argument at `slot` of `callee` is handed to, else None."""
        found = self.signature(callee, origin)
        if found is None:
            return None
        path, signature = found
        param = signature.param(slot)
        for inner, inner_slot in signature.uses_of(param) if param is not None else ():
            api = self.takes_device(inner, inner_slot)
            if api is None and depth > 1:
                api = self.reaches(inner, inner_slot, path, depth - 1)
            if api is not None:
                return api
        return None
