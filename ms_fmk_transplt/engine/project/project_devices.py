"""Which parameters of the project's own functions and classes a value reaches a device API through.

A `"cuda"` that a module hands to the project's own helper (`move(x, "cuda")`, `Runner(model,
"cuda")`, `Config(accel="cuda")`) is a device when the helper hands that parameter on to an API
that takes one, wherever the helper lives. Each file converts alone, so what the project's other
modules do with their parameters is gathered once per run, with the input tree
(engine/project/first_party.py's `ProjectLayout`), by the standard library's `ast` (no libcst): per module,
each top-level function's and class's parameters and what each is handed to (`Use`: the callee as
the module names it, and the position or keyword). Whether a use takes a device is the rule data's
answer (`device_context` of TP103: `calls`, `keywords`), asked when a file converts; a use handing
the parameter to another function of the project is followed there (`Reach`), across modules.

- **A function** `def move(batch, target): return batch.to(target)`: its parameters in order.
- **An enum** (`class TimerType(Enum)`): `TimerType("cuda")` in another module looks up a member
  by its value, a label like the member (engine/devices/device_evidence.py keeps the enum's own members).
- **A class**: its `__init__`'s parameters, each also reaching what the attribute it is stored in
  reaches in any method (`self.where = where` ... `x.to(self.where)`); a class without `__init__`
  (a dataclass) takes its annotated fields in order (`accel: str = "cuda"`, a property returning
  `torch.device(self.accel)`).
- **A method** (`Runner.run`, `Runner.move`): its parameters, for a call on an instance of the
  class the calling module binds (`r = Runner(); r.run(device="cuda")`, `self.runner.move(...)`).
- **`*args` / `**kwargs` handed on** (`def wrap(*a, **kw): return inner(*a, **kw)`): an argument
  past the named parameters, or a keyword none of them takes, is followed into `inner`.
- Imports absolute or relative (`from .helpers import move`, `from . import helpers`), and names a
  module re-exports (`pkg/__init__.py`: `from .helpers import pick`, `from .helpers import *` with
  or without `__all__`): `ModuleFacts.exports`, `stars`, `public`, followed by
  engine/project/project_index.py.
- The other way round, what a module does with the results of the project's functions and with
  the project's constants it imports (`x.to(pick())`, `dev = pick(); model.to(dev)`,
  `self.where = pick()` read as `x.to(self.where)` in another method, `cfg.device = pick()`,
  `state["device"] = pick()`, `print(name())`, `def outer(): return pick()` followed to what
  outer's callers do):
  `ModuleFacts.results`, gathered by engine/project/project_results.py in the same walk;
  engine/project/project_index.py hands each module what its importers do with its own.
- Where an instance comes from: a call of the class (`r = Runner()`), a factory of the project
  returning one (`def make_runner(): return Runner(...)`, `ModuleFacts.makes`), an annotation
  (`def go(r: Runner)`, `job: Optional["Runner"]`, a class's `runner: Runner` read as
  `self.runner`); a method a class inherits from a base in another module (`class Fast(Runner)`,
  `Fast().move("cuda")`) is looked up on its bases (`ModuleFacts.bases`, engine/project/project_index.py).
- Not followed: a stored result read in another module than the one storing it
  (`cfg.device = pick()` in one, `model.to(cfg.device)` in another), a method's result
  (`Picker().device()`), `self.move("cuda")` inside a subclass.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from ms_fmk_transplt.engine.project.project_results import CALLED, Results, exported, result_uses
from ms_fmk_transplt.engine.project.project_walk import (
    OWN,
    StatementNodes,
    Use,
    aliases,
    callee_of,
    choices,
    relative,
)

_RECEIVERS = ("self", "cls")
_DEPTH = 4  # helpers handing a value on to helpers: how far it is followed


@dataclass(frozen=True)
class Signature:
    """A callable of the project: its positional parameters and what each parameter is handed to."""

    params: tuple[str, ...]
    uses: tuple[tuple[str, tuple[Use, ...]], ...]  # parameter -> its uses (keyword-only ones too)
    enum: bool = False  # an Enum: `TimerType("cuda")` looks up a member by its value, a label
    # `inner(*args)` / `inner(**kwargs)`: (inner, the position `*args` stands at) / inner
    star: tuple[Use, ...] = ()
    double_star: tuple[str, ...] = ()

    def param(self, slot: int | str) -> str | None:
        """The parameter an argument at position `slot` (or with keyword `slot`) binds."""
        if isinstance(slot, int):
            return self.params[slot] if slot < len(self.params) else None
        return slot if any(name == slot for name, _ in self.uses) or slot in self.params else None

    def uses_of(self, param: str) -> tuple[Use, ...]:
        return next((uses for name, uses in self.uses if name == param), ())

    def handed_on(self, slot: int | str) -> Iterator[Use]:
        """Where an argument no named parameter binds goes: through `*args` (its position there)
        or `**kwargs` (its keyword)."""
        if isinstance(slot, int):
            for inner, at in self.star:
                if isinstance(at, int):
                    yield inner, at + slot - len(self.params)
        else:
            yield from ((inner, slot) for inner in self.double_star)

    def handing(self) -> bool:
        return self.enum or bool(self.star or self.double_star) or any(uses for _, uses in self.uses)


Method = tuple["ast.FunctionDef | ast.AsyncFunctionDef", StatementNodes]
ModuleSignatures = Mapping[str, Signature]  # top-level name (`Runner.run` for a method) -> signature


@dataclass(frozen=True)
class ModuleFacts:
    """What one module tells the others: its signatures, and the names it imports (absolute:
    `pkg.helpers.move`, `pkg.helpers`), which say whose signatures its own conversion reads; the
    names it re-exports; and what it does with the values of other modules' functions."""

    signatures: dict[str, Signature]
    imports: tuple[str, ...] = ()
    # `pick()` / `ACCEL` as the module spells it -> what the result / value is handed to
    results: Results = ()
    exports: tuple[tuple[str, str], ...] = ()  # a top-level import's bound name -> its spelling
    stars: tuple[str, ...] = ()  # `from .helpers import *`: the modules, spelled
    public: tuple[str, ...] | None = None  # `__all__`, when it is a literal list
    defined: frozenset[str] = frozenset()  # its public top-level functions, classes and variables
    # `pick()` / `ACCEL`: its top-level functions and constants whose value may hold a literal
    # (a string in it, or a name the device flow follows): what its importers' uses decide
    valued: frozenset[str] = frozenset()
    # its top-level functions that return only string literals (`return "cuda"`, a ternary of them)
    worded: frozenset[str] = frozenset()
    # a top-level function -> the callee of the call it returns (`return Runner(...)`: a factory)
    makes: tuple[tuple[str, str], ...] = ()
    # a class -> (its bases as spelled, the members it defines: methods, `__init__` for a dataclass)
    bases: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()

    def seen(self) -> tuple[object, ...]:
        """What the module's importers read of it (a part of their cache keys)."""
        return (
            sorted(self.signatures.items()),
            self.exports,
            self.stars,
            self.public,
            sorted(self.defined),
            sorted(self.valued),
            sorted(self.worded),
            self.makes,
            self.bases,
        )


def scan_source(source: bytes, path: str) -> ModuleFacts:
    """The signatures of a module's top-level functions, classes and methods whose parameters are
    handed on, its imports, re-exports and uses of other modules' values (none for a file that
    does not parse). One walk of each statement (a class's: each of its own)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ModuleFacts({})
    walked: list[tuple[ast.stmt, StatementNodes]] = []
    functions: list[
        tuple[ast.stmt, StatementNodes]
    ] = []  # the top-level statements (a class's are its methods')
    methods: dict[str, dict[str, Method]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            own = methods[statement.name] = {}
            for inner in statement.body:
                w = StatementNodes(inner)
                walked.append((inner, w))
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    own.setdefault(inner.name, (inner, w))
        else:
            walked.append((statement, StatementNodes(statement)))
            functions.append((statement, walked[-1][1]))
    names = aliases(node for _, w in walked for node in w.imports)
    imports = {*names.values()}
    for _, w in walked:
        for n in w.imports:
            if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
                imports.add(relative(n.level, n.module, "") if n.level else n.module or "")
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                imports.add(n.module)
    defined: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[statement.name] = f"{path}{OWN}{statement.name}"
            defined.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            defined.update(t.id for t in targets if isinstance(t, ast.Name))
    found: dict[str, Signature] = {}
    for statement, w in functions:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            signature = _function(statement, w, names) if _params(statement) else None
            if signature is not None and signature.handing():
                found[statement.name] = signature
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            found.update(_class(statement, methods[statement.name], names))
    exports, stars, public = exported(tree.body)
    own_functions = {
        id(w): s.name for s, w in functions if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    valued, worded, makes = _values(functions, names)
    return ModuleFacts(
        found,
        tuple(sorted(imports)),
        result_uses([w for _, w in walked], names, own_functions),
        exports,
        stars,
        public,
        frozenset(name for name in defined if not name.startswith("_")),  # what `import *` takes
        valued,
        worded,
        makes,
        tuple(_bases(s, methods[s.name], names) for s in tree.body if isinstance(s, ast.ClassDef)),
    )


def _holds_value(node: ast.expr) -> bool:
    """Does a returned or bound value hold a literal (`"cuda"`, `torch.device("cuda")`) or a name
    the device flow follows (`return ACCEL`, `return self.kind`)? `return pick()` does not."""
    if any(isinstance(c, (ast.Name, ast.Attribute, ast.Subscript)) for c in choices(node)):
        return True
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(node))


def _spelled(func: ast.expr, names: Mapping[str, str]) -> str | None:
    """A callee as the module spells it when its root is a name the module binds (imports or defines)."""
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    return callee_of(func, names) if isinstance(root, ast.Name) and root.id in names else None


def _worded(values: list[ast.expr | None]) -> bool:
    """Is every value returned a string literal (or None), one at least a string?"""
    picked = [c for v in values if v is not None for c in choices(v)]
    constants = [c.value for c in picked if isinstance(c, ast.Constant)]
    return (
        len(constants) == len(picked)
        and any(isinstance(v, str) for v in constants)
        and all(v is None or isinstance(v, str) for v in constants)
    )


def _values(
    functions: list[tuple[ast.stmt, StatementNodes]], names: Mapping[str, str]
) -> tuple[frozenset[str], frozenset[str], tuple[tuple[str, str], ...]]:
    """(the top-level functions and constants whose values may hold a literal, the functions
    returning only string literals, the functions that return a call of the project's: `def
    make_runner(): return Runner(...)`, or `r = Runner(); return r`)."""
    valued: set[str] = set()
    worded: set[str] = set()
    makes: list[tuple[str, str]] = []
    for statement, w in functions:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            values = [r.value for r in w.returns if r.value is not None]
            if any(_holds_value(v) for v in values):
                valued.add(statement.name + CALLED)
            if _worded([r.value for r in w.returns]):
                worded.add(statement.name)
            calls = {t.id: a.value for a in w.assigns for t in a.targets if isinstance(t, ast.Name)}
            for value in values:
                made = calls.get(value.id) if isinstance(value, ast.Name) else value
                spelled = _spelled(made.func, names) if isinstance(made, ast.Call) else None
                if spelled is not None:
                    makes.append((statement.name, spelled))
                    break
        elif (
            isinstance(statement, (ast.Assign, ast.AnnAssign))
            and statement.value is not None
            and _holds_value(statement.value)
        ):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            valued.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(valued), frozenset(worded), tuple(makes)


def _bases(
    cls: ast.ClassDef, methods: Mapping[str, Method], names: Mapping[str, str]
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(the class, its bases as the module spells them, the members it defines itself: its
    methods, and `__init__` for a dataclass's generated one)."""
    spelled = tuple(filter(None, (_spelled(b, names) for b in cls.bases)))
    members = set(methods)
    if any(isinstance(s, ast.AnnAssign) for s in cls.body):
        members.add("__init__")
    return cls.name, spelled, tuple(sorted(members))


def _handed(
    calls: Iterable[ast.Call], key: Callable[[ast.expr], str | None], names: Mapping[str, str]
) -> dict[str, set[Use]]:
    """What each value `key` names (a parameter, an attribute) is handed to by these calls; a
    `*name` at position i as `(callee, "*i")`, a `**name` as `(callee, "**")`."""
    found: dict[str, set[Use]] = {}
    for call in calls:
        callee = callee_of(call.func, names)
        slots: list[tuple[int | str, ast.expr]] = []
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                name = key(arg.value)
                if name is not None:
                    found.setdefault(name, set()).add((callee, f"*{index}"))
                break
            slots.append((index, arg))
        for k in call.keywords:
            if k.arg is not None:
                slots.append((k.arg, k.value))
            else:
                name = key(k.value)
                if name is not None:
                    found.setdefault(name, set()).add((callee, "**"))
        for slot, value in slots:
            for choice in choices(value):
                name = key(choice)
                if name is not None:
                    found.setdefault(name, set()).add((callee, slot))
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


def _signature(
    params: list[str],
    keyword_only: list[str],
    handed: dict[str, set[Use]],
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None,
) -> Signature:
    uses = tuple((p, tuple(sorted(handed[p], key=repr))) for p in (*params, *keyword_only) if p in handed)
    star: list[Use] = []
    double_star: list[str] = []
    arguments = function.args if function is not None else None
    if arguments is not None and arguments.vararg is not None:  # inner(*args): "*i" -> position i
        star = [
            (c, int(s[1:]))
            for c, s in handed.get(arguments.vararg.arg, ())
            if isinstance(s, str) and s[1:].isdigit()
        ]
    if arguments is not None and arguments.kwarg is not None:
        double_star = [c for c, s in handed.get(arguments.kwarg.arg, ()) if s == "**"]
    return Signature(
        tuple(params), uses, star=tuple(sorted(star, key=repr)), double_star=tuple(sorted(double_star))
    )


def _function(
    function: ast.FunctionDef | ast.AsyncFunctionDef, walked: StatementNodes, names: Mapping[str, str]
) -> Signature:
    positional, keyword_only = _param_names(function)
    wanted = {*positional, *keyword_only, *_rest(function)}
    return _signature(positional, keyword_only, _handed(walked.calls, _param(wanted), names), function)


def _rest(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The names of `*args` and `**kwargs`."""
    return [a.arg for a in (function.args.vararg, function.args.kwarg) if a is not None]


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Does the function take a parameter besides its receiver?"""
    positional, keyword_only = _param_names(function)
    return bool(positional or keyword_only or _rest(function))


def _param(wanted: set[str]) -> Callable[[ast.expr], str | None]:
    return lambda node: node.id if isinstance(node, ast.Name) and node.id in wanted else None


def _class(
    cls: ast.ClassDef, methods: Mapping[str, Method], names: Mapping[str, str]
) -> dict[str, Signature]:
    """The class's signature (`Runner`: its `__init__`'s, or a dataclass's fields) and its
    methods' (`Runner.run`), each parameter also reaching what the attribute it is stored in
    reaches in any method."""
    if any(callee_of(b, {}).endswith("Enum") for b in cls.bases):
        return {cls.name: Signature((), (), enum=True)}
    fields = [
        s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    ]
    taking = {name: method for name, method in methods.items() if _params(method[0])}
    if not taking and not fields:
        return {}  # nothing a caller hands it
    # attribute -> what it is handed to, in any method
    through = _handed((c for _, w in methods.values() for c in w.calls), _attribute, names)
    found: dict[str, Signature] = {}
    for name, (function, walked) in taking.items():
        positional, keyword_only = _param_names(function)
        wanted = {*positional, *keyword_only, *_rest(function)}
        handed = _handed(walked.calls, _param(wanted), names)
        for assign in walked.assigns:  # self.where = where: the parameter reaches what the attribute does
            for target in assign.targets:
                attribute = _attribute(target)
                for choice in choices(assign.value) if attribute in through else ():
                    if isinstance(choice, ast.Name) and choice.id in wanted:
                        handed.setdefault(choice.id, set()).update(through[attribute or ""])
        signature = _signature(positional, keyword_only, handed, function)
        if signature.handing():
            found[cls.name if name == "__init__" else f"{cls.name}.{name}"] = signature
    if "__init__" not in methods and fields:  # a dataclass: its annotated fields, in order
        signature = _signature(fields, [], through)
        if signature.handing():
            found[cls.name] = signature
    return found


class Reach:
    """Does a value handed to the project's own callable reach a device API? (one file's view)"""

    def __init__(
        self,
        signatures: Mapping[str, ModuleSignatures],
        locate: Callable[[str, str], tuple[str, str] | None],
        takes_device: Callable[[str, int | str], str | None],
        inherited: Callable[[str, str], Iterable[tuple[str, str]]] = lambda path, member: (),
    ) -> None:
        self.signatures = signatures  # module path -> its signatures
        # (spelled callee, the module spelling it) -> (module path, member) of the project
        self.locate = locate
        self.takes_device = takes_device  # (callee, slot) -> the device API's name, else None
        self.inherited = inherited  # (module path, `Fast.move`) -> where its bases define it

    def signature(self, callee: str, origin: str = "") -> tuple[str, Signature] | None:
        """The project's callable a qualified name, a `path::name` or a relative spelling
        (`..utils:move`, named in the module at `origin`) names, with its module's path."""
        found = self.locate(callee, origin) if callee else None
        if found is None:
            return None
        path, member = found
        signature = self.signatures.get(path, {}).get(member)
        if signature is None:  # Fast().move("cuda"), `move` defined on Fast's base in another module
            for base, inherited in self.inherited(path, member):
                signature = self.signatures.get(base, {}).get(inherited)
                if signature is not None:
                    return base, signature
        return None if signature is None else (path, signature)

    def reaches(self, callee: str, slot: int | str, origin: str = "", depth: int = _DEPTH) -> str | None:
        """The device API an argument at `slot` of `callee` is handed to, else None."""
        found = self.signature(callee, origin)
        if found is None:
            return None
        path, signature = found
        param = signature.param(slot)
        inner_uses = signature.uses_of(param) if param is not None else tuple(signature.handed_on(slot))
        for inner, inner_slot in inner_uses:
            api = self.takes_device(inner, inner_slot)
            if api is None and depth > 1:
                api = self.reaches(inner, inner_slot, path, depth - 1)
            if api is not None:
                return api
        return None

    def own(self, path: str, name: str) -> str:
        """How the module at `path` names its own member `name` for `signature`."""
        return f"{path}{OWN}{name}"
