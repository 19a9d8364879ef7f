"""The one registry of the kinds' hooks: by node class and lookup key, each list in order.

Every kind compiles its entries into hooks here (`Tables.hooks`, filled by `ruleset/kinds/*.py`).
A `Slot` names a node class and the interface its hooks implement (engine/interface/hooks.py declares one
per interface: `CALLS`, `METHODS`, `STRINGS`, ...); within a slot a hook is found by a lookup
key: a qualified name (`torch.cuda.synchronize`), every direct member of a module
(`torch.cuda.*`), a short name after a dot (`.cuda`: any receiver's), a variable's name, or `*`
(any node of the class). engine/interface/hook_runs.py composes the hooks of one node, for the
transformer's callbacks and for the generic dispatch of engine/conversion/node_hooks.py alike; the hooks of
a `node_slot` (the generic `NodeHook`) need no engine change: they name their node class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import libcst as cst

ANY = "*"
T = TypeVar("T")
GENERIC = "node"  # the slot name of the generic hooks


@dataclass(frozen=True)
class Slot(Generic[T]):
    """Hooks of one interface on nodes of one class (`T`: the interface, for the type checker)."""

    node: type[cst.CSTNode]
    name: str
    # what the registry files the slot under: a string hashes in C, a dataclass in Python, and
    # the transformer looks slots up for most names, attributes and calls it leaves
    id: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", f"{self.node.__name__}:{self.name}")


class HookRegistry:
    """Hooks by slot, then lookup key; each list in ascending `order` (a hook without one counts
    0), then registration order. Built once per run, pickled to workers and the cache."""

    def __init__(self) -> None:
        self._hooks: dict[str, dict[str, list[Any]]] = {}  # by `Slot.id`
        self.generic: set[type[cst.CSTNode]] = set()  # node classes with generic hooks
        self._derived: dict[str, Any] = {}  # facts read off the hooks, until the next change

    def add(self, slot: Slot[T], key: str, hook: T) -> None:
        """Register `hook` under `key`, after the hooks there of no higher `order`."""
        hooks = self._hooks.setdefault(slot.id, {}).setdefault(key, [])
        self._derived.clear()
        hooks.append(hook)
        hooks.sort(key=_order)
        if slot.name == GENERIC:
            self.generic.add(slot.node)

    def put(self, slot: Slot[T], key: str, hook: T) -> None:
        """Make `hook` the one hook under `key` (a later rule for the same name replaces one)."""
        self._hooks.setdefault(slot.id, {})[key] = []
        self.add(slot, key, hook)

    def at(self, slot: Slot[T], key: str) -> list[T] | None:
        """The hooks under `key` (None: none)."""
        keyed = self._hooks.get(slot.id)
        return keyed.get(key) if keyed is not None else None

    def one(self, slot: Slot[T], key: str) -> T | None:
        """The hook under `key` of a slot filled by `put`, or None."""
        hooks = self.at(slot, key)
        return hooks[-1] if hooks else None

    def keyed(self, slot: Slot[T]) -> dict[str, list[T]]:
        """Every key of a slot with its hooks, in registration order (read-only: add through `add`)."""
        return self._hooks.get(slot.id, {})

    def all(self, slot: Slot[T]) -> list[T]:
        """Every hook of a slot: by key in registration order, each key's in its order."""
        return [hook for hooks in self.keyed(slot).values() for hook in hooks]

    def every(self) -> list[Any]:
        """Every hook registered, of every slot and key."""
        return [hook for keyed in self._hooks.values() for hooks in keyed.values() for hook in hooks]

    def remove(self, slot: Slot[T], key: str, drop: Callable[[T], bool]) -> None:
        """Drop the hooks under `key` that `drop` selects (a later rule replacing one)."""
        hooks = self.at(slot, key)
        if hooks is not None:
            self._derived.clear()
            hooks[:] = [hook for hook in hooks if not drop(hook)]

    def derived(self, name: str, make: Callable[[], T]) -> T:
        """A fact `make` reads off the hooks, made once until a hook is added or removed (the
        registry is shared by every file's view of the tables)."""
        try:
            return self._derived[name]  # stored by this method: a T
        except KeyError:
            value = self._derived[name] = make()
            return value


def _order(hook: Any) -> int:
    return int(getattr(hook, "order", 0))


def keys_of(node: cst.CSTNode, qualify: Callable[[cst.CSTNode], str | None]) -> list[str]:
    """A node's lookup keys, most specific first: its qualified name (a call's: its function's),
    its module's `.*`, its short name after a dot, then `*`."""
    target = node.func if isinstance(node, cst.Call) else node
    keys = []
    name = qualify(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
    if name is not None:
        keys.append(name)
        if "." in name:
            keys.append(name.rsplit(".", 1)[0] + ".*")
    if isinstance(target, cst.Attribute):
        keys.append("." + target.attr.value)
    elif isinstance(target, cst.Name):
        keys.append("." + target.value)
    keys.append(ANY)
    return keys
