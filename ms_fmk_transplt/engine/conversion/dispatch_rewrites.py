"""The traversal half of the device-dispatch analysis (engine/devices/dispatch_sites.py).

`KeptAlternatives` is the transformer's base: it does not enter a node the analysis keeps (or a
device test guarding CUDA-only code: engine/devices/cuda_only.py), so
every rewrite, import and finding below it is skipped and its bytes stay; the first node kept
of a dispatch gets one note naming the NPU alternative's line. `DispatchRewrites` notes the
vendor-only reads and writes `"npu"` beside the `"cuda"` of a list of supported device types.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ms_fmk_transplt.engine.devices import CudaOnlyGuards, DeviceDispatch, Kept, code_of
from ms_fmk_transplt.engine.interface import STRINGS, Rule, Site, Tables
from ms_fmk_transplt.engine.literals import LiteralRoles, Role
from ms_fmk_transplt.engine.syntax import CachedDispatch, NodeIndex, children
from ms_fmk_transplt.records import Operation

_NOT_CONVERTED = (Role.PROSE, Role.CLAIMED, Role.DATA_KEY)  # a kept one changes nothing: no note


class DispatchRewrites:
    """What the transformer does at a dispatch's alternatives: leave them, note them, widen lists."""

    def __init__(self, site: Site, roles: LiteralRoles, tables: Tables, nodes: NodeIndex) -> None:
        """`site` takes the findings; `roles` tells which literals no rule converts."""
        self.site = site
        self.roles = roles
        self.sites = DeviceDispatch(tables.device_spec, site.qualify)
        rules = [getattr(hook, "rule", None) for hook in tables.hooks.all(STRINGS)]
        self.rule = next(  # the device rule, whose device_context holds the dispatch data
            (r for r in rules if isinstance(r, Rule) and "predicates" in r.params.get("device_context", {})),
            None,
        )
        self._noted: set[int] = set()
        if self.rule is None:
            return
        self.sites.scan(nodes)
        # a device test guarding CUDA-only code (a cuDNN operator, a CUDA extension): kept, reported
        guards = CudaOnlyGuards(self.sites.spec, site.qualify, roles.context.device_typed)
        guards.scan(nodes)
        for node, what in guards.guards:
            self.sites.kept.setdefault(id(node), Kept(id(node), None, "guard"))
            site.report_message(
                node,
                self.rule,
                Operation.CHECK,
                f"{code_of(node)} kept: the device test guards CUDA-only code ({what}); the NPU takes"
                " the other path",
            )
        for read in self.sites.vendor_reads:
            site.report_message(
                read,
                self.rule,
                Operation.CHECK,
                f"{code_of(read)} kept: a vendor-only read under a test that is never true on the NPU",
            )

    def enter(self, node: cst.CSTNode) -> bool:
        """False: the node stays as written (one note per dispatch that had something to convert)."""
        kept = self.sites.keeps(node)
        if kept is None:
            return True
        rule = self.rule
        if (
            kept.npu is not None
            and kept.place not in self._noted
            and rule is not None
            and rule.params["old"] in self._code(node)
        ):
            self._noted.add(kept.place)
            self.site.report_message(
                node,
                rule,
                Operation.CHECK,
                f"{kept.what} kept as written: the code already has an NPU alternative (line {{line}})",
                related=kept.npu,
            )
        return False

    def _code(self, node: cst.CSTNode) -> str:
        """The node's code without the literals no rule converts (prose, data keys, claimed ones)."""
        text = code_of(node)
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.SimpleString):
                if self.roles.of(current).role in _NOT_CONVERTED:
                    text = text.replace(current.value, "", 1)
                continue
            stack.extend(children(current))
        return text

    def widen(self, original: cst.CSTNode, updated: Any) -> Any:
        """A list of supported device types gets "npu" beside its "cuda"; anything else is as updated."""
        index = self.sites.widened.get(id(original))
        if index is None or self.rule is None:
            return updated
        elements = list(updated.elements)
        cuda = elements[index]
        literal = cuda.value
        assert isinstance(literal, cst.SimpleString)  # the analysis widens only a list holding "cuda"
        new = self.rule.params["new"]
        added = cuda.with_changes(
            value=literal.with_changes(value=f"{literal.prefix}{literal.quote}{new}{literal.quote}")
        )
        if index == len(elements) - 1:  # the last item: its comma (or none) moves to the new one
            comma = cuda.comma
            elements[index] = cuda.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            alone = len(elements) == 1 and isinstance(updated, cst.Tuple)  # ("cuda",) -> ("cuda", "npu")
            added = added.with_changes(comma=cst.MaybeSentinel.DEFAULT if alone else comma)
        elements.insert(index + 1, added)
        self.site.report_message(
            original,
            self.rule,
            Operation.MODIFY,
            f"{new!r} added beside {literal.value}: a list of the device types the code supports",
        )
        if self.rule.needs_torch_npu:
            self.site.require_torch_npu()
        return updated.with_changes(elements=elements)


class KeptAlternatives(CachedDispatch):
    """A transformer that leaves the nodes its `dispatch` keeps as written."""

    dispatch: DispatchRewrites

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self.dispatch.enter(node) and CachedDispatch.on_visit(self, node)

    def on_leave(self, original_node: Any, updated_node: Any) -> Any:
        if self.dispatch.sites.keeps(original_node) is not None:
            return original_node
        result = CachedDispatch.on_leave(self, original_node, updated_node)
        return self.dispatch.widen(original_node, result)
