"""The one registry of the kinds' hooks: by node class and lookup key, each list in order.

Every kind compiles its entries into hooks here (`Tables.hooks`, filled by `ruleset/kinds/*.py`).
A lookup key is a qualified name (`torch.cuda.synchronize`), every direct member of a module
(`torch.cuda.*`), a short name after a dot (`.cuda`: any receiver's), or `*` (any node of the
class). The transformer composes the hooks of the classes in `OWN_DISPATCH` in a callback of its
own (`cst.Call`: engine/transformer.py); every other class goes through the generic dispatch of
engine/node_hooks.py. So a new kind needs no engine change: its hooks name their node class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

ANY = "*"
# node classes whose hooks the transformer composes in a callback of its own
OWN_DISPATCH: frozenset[type[cst.CSTNode]] = frozenset({cst.Call})


class HookRegistry:
    """Hooks by node class, then lookup key; each list in ascending `order` (a hook without one
    counts 0), then registration order. Built once per run, pickled to workers and the cache."""

    def __init__(self) -> None:
        self._hooks: dict[type[cst.CSTNode], dict[str, list[Any]]] = {}
        self.generic: set[type[cst.CSTNode]] = set()  # classes the generic dispatch serves

    def add(self, node: type[cst.CSTNode], key: str, hook: Any) -> None:
        """Register `hook` for nodes of class `node` whose lookup key is `key`."""
        hooks = self._hooks.setdefault(node, {}).setdefault(key, [])
        hooks.append(hook)
        hooks.sort(key=_order)
        if node not in OWN_DISPATCH:
            self.generic.add(node)

    def at(self, node: type[cst.CSTNode], key: str) -> list[Any] | None:
        """The hooks of one node class and key (None: none)."""
        keyed = self._hooks.get(node)
        return keyed.get(key) if keyed is not None else None

    def keyed(self, node: type[cst.CSTNode]) -> dict[str, list[Any]]:
        """Every key of one node class with its hooks (a read-only view: add through `add`)."""
        return self._hooks.get(node, {})

    def remove(self, node: type[cst.CSTNode], key: str, drop: Callable[[Any], bool]) -> None:
        """Drop the hooks of one class and key that `drop` selects (a later rule replacing one)."""
        hooks = self.at(node, key)
        if hooks is not None:
            hooks[:] = [hook for hook in hooks if not drop(hook)]

    def every(self) -> list[Any]:
        """Every hook registered, of every class and key."""
        return [hook for keyed in self._hooks.values() for hooks in keyed.values() for hook in hooks]


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
