"""libcst's tree, cheaply: one read-only index of nodes by class, a transform that rebuilds only
what changed, callbacks looked up once per class, the parser without re-validation, positions
of reported nodes only and the printing of changed statements only. No rule knowledge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.syntax.dispatch import CachedDispatch
    from ms_fmk_transplt.engine.syntax.node_index import (
        NodeIndex,
        children,
        if_runs,
        short_name,
        type_check_targets,
    )
    from ms_fmk_transplt.engine.syntax.node_positions import ModuleText, positions, positions_and_text
    from ms_fmk_transplt.engine.syntax.parsing import parse_module
    from ms_fmk_transplt.engine.syntax.splice import module_bytes
    from ms_fmk_transplt.engine.syntax.traverse import child_nodes, transform

__all__ = [
    "CachedDispatch",
    "ModuleText",
    "NodeIndex",
    "child_nodes",
    "children",
    "if_runs",
    "module_bytes",
    "parse_module",
    "positions",
    "positions_and_text",
    "short_name",
    "transform",
    "type_check_targets",
]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {
    "CachedDispatch": "dispatch",
    "ModuleText": "node_positions",
    "NodeIndex": "node_index",
    "child_nodes": "traverse",
    "children": "node_index",
    "if_runs": "node_index",
    "module_bytes": "splice",
    "parse_module": "parsing",
    "positions": "node_positions",
    "positions_and_text": "node_positions",
    "short_name": "node_index",
    "transform": "traverse",
    "type_check_targets": "node_index",
}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
