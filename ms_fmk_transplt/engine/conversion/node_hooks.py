"""The generic dispatch of the hook registry (engine/interface/hook_registry.py): for a node, its hooks.

As the transformer leaves a node of a class no callback of its own composes, the node's hooks
run in the registry's order over its lookup keys, most specific first, each given the node as the
previous one left it; a hook that writes a node of another class ends them (engine/interface/hook_runs.py
composes them, as it does the hooks of the transformer's own callbacks).
"""

from __future__ import annotations

from typing import Any

from ms_fmk_transplt.engine.conversion.dispatch_rewrites import KeptAlternatives
from ms_fmk_transplt.engine.interface import HookRuns, Tables


class NodeHooks(KeptAlternatives):
    """A transformer that runs the registry's hooks of every other node class as it leaves a node
    (never on nodes a device dispatch keeps as written)."""

    tables: Tables
    hook_runs: HookRuns

    def on_leave(self, original_node: Any, updated_node: Any) -> Any:
        result = super().on_leave(original_node, updated_node)
        if original_node.__class__ not in self.tables.hooks.generic:
            return result
        if self.dispatch.sites.keeps(original_node) is not None:
            return result
        return self.hook_runs.generic(original_node, result)
