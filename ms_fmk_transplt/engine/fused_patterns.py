"""Rewrites of computations spread over several statements (`--opt-in affinity`).

The pattern hooks (engine/hooks.py's `PatternHook`) plan their replacements once, on the original
module, before the transformer runs; `FusedReplacements` is the transformer's base that, leaving a
planned node, puts the replacement in its place and reports it. A node the device-dispatch
analysis keeps stays as written, with nothing reported (KeptAlternatives decides first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from ms_fmk_transplt.engine.dispatch_rewrites import KeptAlternatives
from ms_fmk_transplt.engine.hooks import Planned
from ms_fmk_transplt.records import Operation

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.hooks import Site
    from ms_fmk_transplt.engine.tables import Tables


class FusedPatterns:
    """The planned replacements of one module, by the id of the original node."""

    def __init__(self, site: Site, tables: Tables, module: cst.Module) -> None:
        self.site = site
        self.planned: dict[int, Planned] = {}
        for hook in tables.pattern_hooks:
            for planned in hook.plan(site, module):
                self.planned.setdefault(id(planned.node), planned)  # the first hook's plan wins


class FusedReplacements(KeptAlternatives):
    """A transformer that replaces the nodes its `fused` plan names."""

    fused: FusedPatterns

    def on_leave(self, original_node: Any, updated_node: Any) -> Any:
        result = KeptAlternatives.on_leave(self, original_node, updated_node)
        planned = self.fused.planned.get(id(original_node)) if self.fused.planned else None
        if planned is None or self.dispatch.sites.keeps(original_node) is not None:
            return result
        self.fused.site.report(original_node, planned.rule, Operation.MODIFY, **planned.fields)
        return planned.build(result)
