"""What a module does with the values the project's other modules give it, read in the same walk as
its signatures (engine/project/project_devices.py), and the names it re-exports.

A literal a helper returns (`def pick(): return "cuda"`) is a device when a module that imports
the helper hands the result to a device API (`x.to(pick())`, `dev = pick(); model.to(dev)`), and
a label when its importers only print, log or compare it. So each module records, per value of
another module it calls or reads (the *producer*, spelled as the module names it:
`pkg.helpers.pick()` for a call's result, `.helpers:pick()` through a relative import,
`pkg.helpers.ACCEL` for a constant), what the value is handed to (a `Use`: the callee as the
module names it and the position or keyword), `COMPARED` where it is compared, `OTHER` for any
other use (an attribute read, an f-string: nothing is known of it), `returned_by(outer)` where
the module's top-level function `outer` returns it (`def outer(): return pick()`, `return pick()
if c else "cpu"`, `dev = pick(); return dev`): engine/project/project_index.py resolves each producer to
the module that defines it, and follows such a use to what outer's callers do with its result.

Places are per module, as variables are in engine/devices/device_flow.py: `dev = pick()` makes every read
of `dev` in the module a use of `pick()`'s result; `self.device = pick()` every read of
`self.device` (in any method of any class of the module); a result stored on another object,
`cfg.device = pick()`, `args.device = pick()`, `self.cfg.device = pick()`, under a literal key,
`state["device"] = pick()`, `state = {"device": pick()}`, every read of that place spelled alike
(`model.to(cfg.device)`, `x.to(state["device"])`); a place copied to another (`dev =
state["device"]`) hands its producers on.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Mapping

from ms_fmk_transplt.engine.project.project_walk import (
    OWN,
    StatementNodes,
    Use,
    callee_of,
    choices,
    place,
    relative,
)

Results = tuple[tuple[str, tuple[Use, ...]], ...]  # producer -> what its value is handed to
COMPARED: Use = ("", "==")
OTHER: Use = ("", "?")
RETURNED = "return "  # a use's slot: the value is returned by the module's function named after it
CALLED = "()"  # a producer's suffix: the result of calling it, not the name itself
# roots whose values are never the project's: left out when the module is read, which keeps its
# facts small (the rest are kept only when they resolve to the project's module)
_TESTS = ("startswith", "endswith")  # a string's methods that compare it
_ROUNDS = 4  # copies of a stored result (`cfg.device = dev`): how many are followed
_FOREIGN = frozenset(sys.stdlib_module_names) | {"torch", "numpy", "builtins", "typing_extensions"}


def _producer(node: ast.expr, names: Mapping[str, str]) -> str | None:
    """How the module spells the value `node` reads when another module may give it: its root
    is a name the module imports (or its own function: `path::pick`)."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name) or root.id not in names:
        return None
    spelled = callee_of(node, names)
    if OWN not in spelled and spelled.split(".", 1)[0] in _FOREIGN:
        return None
    return spelled


def _slots(call: ast.Call) -> Iterator[tuple[int | str, ast.expr]]:
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return
        yield index, arg
    yield from ((k.arg, k.value) for k in call.keywords if k.arg is not None)


def returned_by(name: str) -> Use:
    """The use of a value a module's top-level function `name` returns (`def outer(): return
    pick()`): what the function's callers do with its result (engine/project/project_index.py follows it)."""
    return ("", RETURNED + name)


def forwarded(use: Use) -> str | None:
    """The function a `returned_by` use hands the value back from, else None."""
    callee, slot = use
    return (
        slot[len(RETURNED) :] if not callee and isinstance(slot, str) and slot.startswith(RETURNED) else None
    )


def _direct_returns(function: ast.AST) -> set[int]:
    """The ids of a function's own return statements (not those of the functions nested in it)."""
    found: set[int] = set()
    stack: list[ast.AST] = list(getattr(function, "body", ()))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            found.add(id(node))
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _stored(w: StatementNodes, producers: Mapping[int, str]) -> dict[str, set[str]]:
    """The producers a statement's own assignments store (`dev` of `dev = pick()`)."""
    found: dict[str, set[str]] = {}
    pairs = [(t, a.value) for a in w.assigns for t in a.targets]
    pairs += [(a.target, a.value) for a in w.annotated if a.value is not None]
    for target, value in pairs:
        key = place(target)
        for choice in choices(value) if key is not None else ():
            if id(choice) in producers:
                found.setdefault(key or "", set()).add(producers[id(choice)])
    return found


def result_uses(
    walked: list[StatementNodes], names: Mapping[str, str], functions: Mapping[int, str] | None = None
) -> Results:
    """Per producer, what the module does with its value (sorted, for a stable digest);
    `functions`: id of a top-level function's walk -> its name (a value it returns is followed)."""
    producers: dict[int, str] = {}  # id(call) -> the producer whose result it is
    for w in walked:
        for call in w.calls:
            spelled = _producer(call.func, names)
            if spelled is not None:
                producers[id(call)] = spelled + CALLED
    if not producers and not any(w.calls for w in walked):
        return ()
    uses: dict[str, set[Use]] = {}
    handled: set[int] = set()  # ids of the producer calls and variable reads whose use is known
    # place -> the producers stored in it: `dev = pick()`, `self.where = pick()`, `cfg.device =
    # pick()`, `state["device"] = pick()`, `state = {"device": pick()}`, `other = dev`
    bound: dict[str, set[str]] = {}

    def made_of(node: ast.expr) -> Iterable[str]:
        made = producers.get(id(node))
        if made is not None:
            return (made,)
        key = place(node) if bound else None
        if key is not None and key in bound:
            return bound[key]
        value = _producer(node, names) if isinstance(node, (ast.Name, ast.Attribute)) else None
        return () if value is None else (value,)  # a constant of another module: ACCEL

    stores = [(a.targets, a.value) for w in walked for a in w.assigns]
    stores += [([a.target], a.value) for w in walked for a in w.annotated if a.value is not None]
    for _ in range(_ROUNDS):  # until no place gains a producer (a chain of copies is short)
        grown = False
        for targets, value in stores:
            for choice in choices(value):
                pairs: list[tuple[str, ast.expr]] = [("", choice)]
                if isinstance(choice, ast.Dict):  # state = {"device": pick()}
                    pairs = [
                        (f"[{k.value!r}]", v)
                        for k, item in zip(choice.keys, choice.values)
                        if isinstance(k, ast.Constant) and isinstance(k.value, str)
                        for v in choices(item)
                    ]
                for suffix, item in pairs:
                    stored = set(made_of(item))
                    if not stored:
                        continue
                    handled.add(id(item))
                    for target in targets:
                        key = place(target)
                        if key is None:  # a, b = ..., f().dev = ...: not followed
                            for producer in stored:
                                uses.setdefault(producer, set()).add(OTHER)
                        elif not stored <= bound.get(key + suffix, set()):
                            bound.setdefault(key + suffix, set()).update(stored)
                            grown = True
        if not grown:
            break

    for w in walked:
        for call in w.calls:
            consumer: str | None = None
            for slot, value in _slots(call):
                for choice in choices(value):
                    for made in made_of(choice):
                        consumer = consumer if consumer is not None else callee_of(call.func, names)
                        uses.setdefault(made, set()).add((consumer, slot))
                        handled.add(id(choice))
        tested = [
            c.func.value for c in w.calls if isinstance(c.func, ast.Attribute) and c.func.attr in _TESTS
        ]
        for operand in (
            *(o for compare in w.compares for o in (compare.left, *compare.comparators)),
            *(m.subject for m in w.matches),  # match kind(): case "cuda":
            *tested,  # kind().startswith("cuda")
        ):
            for choice in choices(operand):
                for made in made_of(choice):
                    uses.setdefault(made, set()).add(COMPARED)
                    handled.add(id(choice))
        name = functions.get(id(w)) if functions else None
        direct: set[int] | None = None
        local: dict[str, set[str]] | None = None  # the results the function itself stores
        for statement in w.returns if name is not None else ():  # def outer(): return pick()
            for choice in choices(statement.value) if statement.value is not None else ():
                given: Iterable[str] = ()
                if id(choice) in producers:
                    given = (producers[id(choice)],)
                else:  # dev = pick(); return dev: stored in this function only
                    local = local if local is not None else _stored(w, producers)
                    given = local.get(place(choice) or "", ())
                if not given:
                    continue
                direct = direct if direct is not None else _direct_returns(w.statement)
                if id(statement) in direct:
                    for producer in given:
                        uses.setdefault(producer, set()).add(returned_by(name or ""))
                    handled.add(id(choice))
        handled.update(id(s.value) for s in w.statements)  # pick() alone: its result is dropped
    for w in walked:
        for call in w.calls:
            dropped = producers.get(id(call))
            if dropped is not None and id(call) not in handled:
                uses.setdefault(dropped, set()).add(OTHER)
        for read in w.reads:
            if read.id in bound and id(read) not in handled:
                for made in bound[read.id]:
                    uses.setdefault(made, set()).add(OTHER)
        for node in w.places if bound else ():
            key = place(node)
            if key is not None and key in bound and id(node) not in handled:
                for made in bound[key]:
                    uses.setdefault(made, set()).add(OTHER)
    return tuple((made, tuple(sorted(found, key=repr))) for made, found in sorted(uses.items()))


def _top(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's top-level statements, and those inside its top-level `if` / `try` blocks
    (`try: from .fast import pick` / `except ImportError: ...`)."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _top([*statement.body, *statement.orelse])
        elif isinstance(statement, ast.Try):
            handlers = [s for h in statement.handlers for s in h.body]
            yield from _top([*statement.body, *handlers, *statement.orelse, *statement.finalbody])
        else:
            yield statement


def exported(
    body: Iterable[ast.stmt],
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...], tuple[str, ...] | None]:
    """(name -> spelling of each name a top-level `from` import binds, the modules `import *`
    reads, `__all__` when it is a literal list or tuple)."""
    exports: list[tuple[str, str]] = []
    stars: list[str] = []
    public: tuple[str, ...] | None = None
    for statement in _top(body):
        if isinstance(statement, ast.ImportFrom):
            module, level = statement.module, statement.level
            for alias in statement.names:
                if alias.name == "*":
                    stars.append(relative(level, module, "") if level else module or "")
                else:
                    spelled = relative(level, module, alias.name) if level else f"{module}.{alias.name}"
                    exports.append((alias.asname or alias.name, spelled))
        elif (
            isinstance(statement, ast.Assign)
            and isinstance(statement.value, (ast.List, ast.Tuple))
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in statement.targets)
        ):
            public = tuple(
                e.value
                for e in statement.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
    return tuple(exports), tuple(stars), public
