"""One cheap read-only pass over a module: its nodes grouped by class.

A `cst.CSTVisitor` pass rebuilds every node it walks through and looks up a `visit_` method per
node: on pytorch/examples each such pass costs about as much as the transform itself. The
engine's look-ahead passes (which variables reach a device API, which attributes and names the
file binds) only read a few kinds of node, in no particular order, so they share one walk over
the dataclass fields instead, skipping the fields that hold only whitespace and punctuation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import libcst as cst

# fields that hold whitespace, comments and punctuation only: no expression or statement below
_FORMATTING = frozenset(
    {"lpar", "rpar", "comma", "leading_lines", "lines_after_decorators", "header", "footer"}
    | {"semicolon", "equal", "dot", "colon", "lbracket", "rbracket", "lbrace", "rbrace"}
    | {"trailing_whitespace", "first_colon", "second_colon", "relative"}
)
_FIELDS: dict[type, tuple[str, ...]] = {}


class _NodeClasses(dict[type, bool]):
    """class -> is it a libcst node class, found once per class: CSTNode is an ABC, and isinstance
    against it runs ABCMeta's Python-level check on every call."""

    def __missing__(self, cls: type) -> bool:
        known = self[cls] = issubclass(cls, cst.CSTNode)
        return known


IS_NODE = _NodeClasses()

N = TypeVar("N", bound=cst.CSTNode)


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in _FORMATTING and not f.name.startswith("whitespace")
        )
    return names


class NodeIndex:
    """Every node of a module below formatting level, by exact class (as `visit_<Class>` sees it)."""

    def __init__(self, root: cst.CSTNode) -> None:
        by_class: dict[type, list[cst.CSTNode]] = {}
        stack: list[cst.CSTNode] = [root]
        pop, push = stack.pop, stack.append
        is_node = IS_NODE
        while stack:
            node = pop()
            cls = node.__class__
            group = by_class.get(cls)
            if group is None:
                by_class[cls] = [node]
            else:
                group.append(node)
            for name in _FIELDS.get(cls) or _fields(cls):
                value = getattr(node, name)
                kind = value.__class__
                if kind is tuple or kind is list:
                    for item in value:
                        if is_node[item.__class__]:
                            push(item)
                elif is_node[kind]:
                    push(value)
        self._by_class = by_class

    def of(self, cls: type[N]) -> list[N]:
        """The nodes of exactly this class (subclasses are their own classes, as for visitors)."""
        return self._by_class.get(cls, [])  # type: ignore[return-value]  # a class's list holds only nodes of that class

    def of_any(self, *classes: type) -> Iterable[Any]:
        """The nodes of each of these classes (typed loosely: the callers read a shared field)."""
        for cls in classes:
            yield from self.of(cls)


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node's children below formatting level, as NodeIndex walks them."""
    for name in _fields(node.__class__):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (item for item in value if isinstance(item, cst.CSTNode))


def short_name(func: cst.BaseExpression) -> str:
    """`f` of `a.b.f` or `f`; '' for anything else."""
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


def type_check_targets(nodes: NodeIndex) -> set[int]:
    """The ids of the class expressions `isinstance(x, C)` and `issubclass(K, (C, D))` test against."""
    found: set[int] = set()
    for call in nodes.of(cst.Call):
        if short_name(call.func) not in ("isinstance", "issubclass") or len(call.args) != 2:
            continue
        target = call.args[1].value
        parts = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
        found.update(map(id, parts))
    return found


def if_runs(body: Iterable[cst.BaseStatement]) -> Iterator[list[cst.If]]:
    """The runs of `if` statements that directly follow one another in a block."""
    run: list[cst.If] = []
    for statement in body:
        if isinstance(statement, cst.If):
            run.append(statement)
            continue
        if run:
            yield run
        run = []
    if run:
        yield run
