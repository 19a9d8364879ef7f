"""Rewrites of computations spread over several statements (`--opt-in affinity`).

The pattern hooks (engine/interface/hooks.py's `PatternHook`) plan their replacements once, on the original
module, before the transformer runs; `FusedReplacements` is the transformer's base that, leaving a
planned node, puts the replacement in its place and reports it. A node the device-dispatch
analysis keeps stays as written, with nothing reported (KeptAlternatives decides first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import libcst as cst

from ms_fmk_transplt.engine.conversion.dispatch_rewrites import KeptAlternatives
from ms_fmk_transplt.engine.interface import FUSED, Planned
from ms_fmk_transplt.records import Operation

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.interface import Site, Tables


# what shows a module computing in float16/bfloat16 (a heuristic: which tensors, it does not tell)
_HALF_DTYPES = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})
_AUTOCASTS = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.cuda.amp.autocast",
        "torch.cpu.amp.autocast",
        "torch.npu.amp.autocast",
    }
)
_HALF_METHODS = frozenset({"half", "bfloat16"})


class FusedPatterns:
    """The planned replacements of one module, by the id of the original node."""

    def __init__(self, site: Site, tables: Tables, module: cst.Module) -> None:
        self.site = site
        self.module = module
        self.hooks = tables.hooks.all(FUSED)
        self._half: bool | None = None
        self._planned: dict[int, Planned] | None = None

    @property
    def planned(self) -> dict[int, Planned]:
        """The plans of every pattern hook, made when first read: by then the site is complete (a
        hook may ask it whether the file computes in half precision)."""
        if self._planned is None:
            self._planned = {}
            for hook in self.hooks:
                for planned in hook.plan(self.site, self.module):
                    self._planned.setdefault(id(planned.node), planned)  # the first hook's plan wins
        return self._planned

    def half_precision(self) -> bool:
        """The module names float16 or bfloat16, autocast, or `.half()` / `.bfloat16()` (computed
        once, when a rewrite for half-precision operators first asks)."""
        if self._half is None:
            self._half = _names_half_precision(self.module, self.site.qualify)
        return self._half


def _names_half_precision(module: cst.Module, qualify: Callable[[cst.CSTNode], str | None]) -> bool:
    todo: list[cst.CSTNode] = [module]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Attribute) and qualify(node) in _HALF_DTYPES:
            return True
        if isinstance(node, cst.Call):
            if qualify(node.func) in _AUTOCASTS:
                return True
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _HALF_METHODS and not node.args:
                return True
        todo.extend(node.children)
    return False


class FusedReplacements(KeptAlternatives):
    """A transformer that replaces the nodes its `fused` plan names."""

    fused: FusedPatterns

    @property
    def half_precision(self) -> bool:
        """The file computes in float16 or bfloat16 somewhere (hooks.Site)."""
        return self.fused.half_precision()

    def on_leave(self, original_node: Any, updated_node: Any) -> Any:
        result = KeptAlternatives.on_leave(self, original_node, updated_node)
        planned = self.fused.planned.get(id(original_node)) if self.fused.planned else None
        if planned is None or self.dispatch.sites.keeps(original_node) is not None:
            return result
        self.fused.site.report(original_node, planned.rule, Operation.MODIFY, **planned.fields)
        return planned.build(result)
