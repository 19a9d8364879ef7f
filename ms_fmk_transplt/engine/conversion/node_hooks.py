"""The generic dispatch of the hook registry (engine/hook_registry.py): for a node, its hooks.

As the transformer leaves a node of a class no callback of its own composes, the node's hooks
run in the registry's order over its lookup keys, most specific first, each given the node as the
previous one left it; a hook that writes a node of another class ends them.
"""

from __future__ import annotations

from typing import Any, cast

from ms_fmk_transplt.engine.conversion.dispatch_rewrites import KeptAlternatives
from ms_fmk_transplt.engine.interface import Site, Tables, keys_of, node_slot


class NodeHooks(KeptAlternatives):
    """A transformer that runs the registry's hooks of every other node class as it leaves a node
    (never on nodes a device dispatch keeps as written)."""

    tables: Tables

    def on_leave(self, original_node: Any, updated_node: Any) -> Any:
        result = super().on_leave(original_node, updated_node)
        cls = original_node.__class__
        if cls not in self.tables.hooks.generic or self.dispatch.sites.keeps(original_node) is not None:
            return result
        site = cast(Site, self)  # the transformer is the hooks' site
        keyed = self.tables.hooks.keyed(node_slot(cls))
        for key in keys_of(original_node, site.qualify):
            for hook in keyed.get(key, ()):
                if not isinstance(result, cls):  # another node was written: it is final
                    return result
                result = hook.rewrite(site, original_node, result, key)
        return result
