"""A transformer's pass over a module that rebuilds only the nodes whose insides changed.

`node.visit(transformer)` rebuilds every node it passes through (libcst's
`_visit_and_replace_children` constructs and validates a new node whether or not a child changed),
and it walks every whitespace, comment and punctuation node. A conversion changes a handful of
nodes per file, so on pytorch/examples that rebuilding was most of the transform's CPU.

`transform` calls the same callbacks (`on_visit` / `on_leave`) on the same nodes, in the same order,
with the same removal and flattening rules, but:

* a node none of whose children changed is handed to `on_leave` as itself (no copy), so the
  unchanged parts of the result are the original node objects (the writer prints only the
  top-level statements that are new objects, engine/syntax/splice.py);
* formatting nodes (whitespace, comments, newlines, operators and punctuation) are not walked
  when the transformer has no callback for any of them (they have no other children).

The order in which a node class's children are visited is libcst's own, read once per class from
its `_visit_and_replace_children`. tests/test_traverse.py runs both passes over every fixture and
compares the results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import libcst as cst
from libcst._nodes import op, whitespace

from ms_fmk_transplt.engine.syntax.node_index import IS_NODE

# classes whose instances hold nothing but other formatting nodes and text
_FORMATTING: frozenset[type] = frozenset(
    cls
    for module in (op, whitespace)
    for cls in vars(module).values()
    if isinstance(cls, type) and issubclass(cls, cst.CSTNode) and cls.__module__ == module.__name__
)
# fields visited as statement bodies: an emptied statement replacing a non-empty one is dropped
_BODIES = frozenset({(cst.Module, "body"), (cst.IndentedBlock, "body")})
_ORDER: dict[type, tuple[str, ...]] = {}


class _FieldOrder(cst.CSTTransformer):
    """Records the fields a node's `_visit_and_replace_children` visits, in order, without descending."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_leave(self, original_node: Any, updated_node: Any) -> Any:
        return updated_node

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.names.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


def _order(node: cst.CSTNode) -> tuple[str, ...]:
    """The node class's child fields in libcst's visiting order (fields it skipped on this node,
    such as an absent f-string format spec, follow in declaration order)."""
    recorder = _FieldOrder()
    node._visit_and_replace_children(recorder)
    seen = dict.fromkeys(recorder.names)
    rest = [f.name for f in dataclasses.fields(node) if f.name not in seen]
    order = _ORDER[node.__class__] = (*seen, *rest)
    return order


def child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node's children in libcst's visiting (source) order, as `node.children` lists them but
    without rebuilding the node."""
    for name in _ORDER.get(node.__class__) or _order(node):
        value = getattr(node, name)
        kind = value.__class__
        if kind is tuple or kind is list:
            for item in value:
                if IS_NODE[item.__class__]:
                    yield item
        elif IS_NODE[kind]:
            yield value


def _has_own(cls: type, name: str) -> bool:
    function = getattr(cls, name, None)
    return function is not None and not getattr(function, "_is_no_op", False)


def skips_formatting(transformer: cst.CSTTransformer) -> bool:
    """Can the formatting nodes be left unwalked: the transformer has no callback for any of them."""
    cls = type(transformer)
    return not any(
        _has_own(cls, f"{kind}_{node_class.__name__}")
        for node_class in _FORMATTING
        for kind in ("visit", "leave")
    )


def transform(module: cst.Module, transformer: cst.CSTTransformer) -> cst.Module:
    """`module.visit(transformer)`, with unchanged nodes kept as they are (see the module doc)."""
    walker = _Walker(transformer)
    result = walker.walk(module)
    if isinstance(result, cst.RemovalSentinel):
        return module.with_changes(body=(), header=(), footer=())
    return result


class _Walker:
    def __init__(self, transformer: cst.CSTTransformer) -> None:
        self.on_visit = transformer.on_visit
        self.on_leave = transformer.on_leave
        self.skip = _FORMATTING if skips_formatting(transformer) else frozenset()

    def walk(self, node: cst.CSTNode) -> Any:
        updated = node
        if self.on_visit(node):
            cls = node.__class__
            order = _ORDER.get(cls) or _order(node)
            changes: dict[str, Any] | None = None
            skip = self.skip
            for name in order:
                value = getattr(node, name)
                kind = value.__class__
                if kind is tuple or kind is list:
                    if value:
                        new_items = self._sequence(value, (cls, name) in _BODIES)
                        if new_items is not None:
                            if changes is None:
                                changes = {}
                            changes[name] = new_items
                elif IS_NODE[kind] and kind not in skip:
                    new = self.walk(value)
                    if new is not value:
                        if changes is None:
                            changes = {}
                        changes[name] = _single(node, name, value, new)
            if changes is not None:
                updated = node.with_changes(**changes)
        return self.on_leave(node, updated)

    def _sequence(
        self, items: tuple[cst.CSTNode, ...] | list[cst.CSTNode], body: bool
    ) -> tuple[cst.CSTNode, ...] | None:
        """The new items, or None when every item came back as itself."""
        skip = self.skip
        out: list[Any] | None = None
        for index, child in enumerate(items):
            kind = child.__class__
            if kind in skip or not IS_NODE[kind]:
                if out is not None:
                    out.append(child)
                continue
            new = self.walk(child)
            if new is child:
                if out is not None:
                    out.append(child)
                continue
            if out is None:
                out = list(items[:index])
            if isinstance(new, cst.FlattenSentinel):
                for part in new:
                    if not (body and not child._is_removable() and part._is_removable()):
                        out.append(part)
            elif not isinstance(new, cst.RemovalSentinel) and not (
                body and not child._is_removable() and new._is_removable()
            ):
                out.append(new)
        return None if out is None else tuple(out)


def _single(parent: cst.CSTNode, name: str, old: cst.CSTNode, new: Any) -> Any:
    """What a one-node field holds after its node was replaced (libcst's removal rules)."""
    if isinstance(new, cst.FlattenSentinel):
        raise TypeError(
            f"a {type(old).__name__} in {type(parent).__name__}.{name} cannot be replaced with a sequence"
        )
    if isinstance(new, cst.RemovalSentinel):
        default = {f.name: f.default for f in dataclasses.fields(parent)}.get(name, dataclasses.MISSING)
        if default is None or isinstance(default, cst.MaybeSentinel):
            return default
        raise TypeError(f"a {type(old).__name__} in {type(parent).__name__}.{name} cannot be removed")
    return new
