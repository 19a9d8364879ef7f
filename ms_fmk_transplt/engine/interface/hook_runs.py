"""The composition of the kinds' hooks on one node: which hooks a node has, and in which order.

The transformer only traverses: as it leaves a name, an attribute chain, a call or a node of a
generic slot it asks `HookRuns`, which finds the node's hooks in the registry
(engine/interface/hook_registry.py) and runs them in order, each on the node as the previous one left it.
Two ways to end the run, the same for every slot: `chained` stops once a hook wrote a node of
another class (a call hook that wrote a conditional expression is final), `first_answer` stops at
the first hook that answers (the rename-by-name hooks return None for a node that is not theirs).
String literals compose the same way in engine/literals/string_rewrites.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

import libcst as cst

from ms_fmk_transplt.engine.interface.hook_registry import keys_of
from ms_fmk_transplt.engine.interface.hooks import (
    ATTRIBUTES,
    CALLS,
    FUNCTIONS,
    METHODS,
    REFERENCES,
    AttributeHook,
    CallHook,
    NameOwner,
    Site,
    node_slot,
)
from ms_fmk_transplt.engine.interface.rule import Rule
from ms_fmk_transplt.engine.interface.tables import Tables
from ms_fmk_transplt.engine.naming import NameUses
from ms_fmk_transplt.engine.syntax import short_name
from ms_fmk_transplt.records import Operation

H = TypeVar("H")
N = TypeVar("N")
R = TypeVar("R")


def chained(result: N, hooks: Iterable[H], apply: Callable[[H, N], N], kind: type) -> N:
    """`apply` each hook to the node as the previous one left it, until one writes a node of
    another class than `kind` (that node is final)."""
    for hook in hooks:
        if not isinstance(result, kind):
            break
        result = apply(hook, result)
    return result


def first_answer(hooks: Iterable[H | None], ask: Callable[[H], R | None]) -> R | None:
    """The answer of the first hook that gives one (None: none did; a None hook is skipped)."""
    for hook in hooks:
        if hook is not None:
            answer = ask(hook)
            if answer is not None:
                return answer
    return None


class HookRuns:
    """The hooks of one module's names, attribute chains, calls and generic nodes, composed."""

    def __init__(
        self,
        site: Site,
        tables: Tables,
        uses: NameUses,
        names: NameOwner,
        function_renames: Mapping[str, tuple[str, Rule]],
        renamed_names: Mapping[str, str],
    ) -> None:
        """`function_renames`: bound name -> (new name, rule) of a function imported by name that a
        rename-by-name hook renames; `renamed_names`: import bindings the rewrites rename."""
        self.site = site
        self.tables = tables
        self.registry = tables.hooks
        self.uses = uses
        self.names = names
        self.function_renames = function_renames
        self.renamed_names = renamed_names

    def name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        """A bare name loaded: the planned rename of its import, else a function hook's (un-called)."""
        if not self.uses.is_load(original):
            return updated
        value = original.value
        function = self.function_renames.get(value)
        if function is not None:
            new_name, rule = function
            self.site.report(original, rule, Operation.MODIFY, old=value, new=new_name)
            return updated.with_changes(value=new_name)
        hook = self.registry.one(FUNCTIONS, value)
        if hook is not None and not self.uses.is_called(original):
            renamed = hook.rewrite_name(self.site, original, updated)
            if renamed is not None:
                return renamed
        new = self.renamed_names.get(value)
        return updated if new is None else updated.with_changes(value=new)

    def attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        """An attribute no qualified name matched, by its name alone: read as a value, the `uncalled`
        function hooks, the references, the attribute hooks, a module's "*" references last."""
        attr = original.attr.value
        registry = self.registry
        hooks: Sequence[AttributeHook | None] = (registry.one(ATTRIBUTES, attr),)
        if not self.uses.is_called(original):
            hooks = (
                registry.one(FUNCTIONS, attr),
                registry.one(REFERENCES, attr),
                hooks[0],
                registry.one(REFERENCES, "*"),
            )
        site = self.site
        answer = first_answer(hooks, lambda hook: hook.rewrite_attribute(site, original, updated))
        return updated if answer is None else answer

    def call(
        self, original: cst.Call, updated: cst.Call, name: str | None, resolved: bool
    ) -> cst.BaseExpression:
        """A call: a method or bare function renamed by name where its qualified name matched no
        rule, then the call hooks by qualified name and by short name, in their order."""
        site = self.site
        func = original.func
        result: cst.BaseExpression = updated
        if isinstance(func, cst.Attribute) and not resolved and isinstance(updated.func, cst.Attribute):
            method_hook = self.registry.one(METHODS, func.attr.value)
            if method_hook is not None:
                result = method_hook.rewrite_method_call(site, original, updated)
        elif isinstance(func, cst.Name) and name is None and func.value not in self.names.bindings.imported:
            function_hook = self.registry.one(FUNCTIONS, func.value)
            if function_hook is not None:  # an imported name: the import's rename covers it
                result = function_hook.rewrite_function_call(site, original, updated)
        hooks = self.tables.call_hooks_for(name) if name and not self.tables.owned(name) else None
        by_short = self.registry.at(CALLS, f".{short_name(func)}")
        if by_short:
            hooks = _by_name_then_short(hooks, by_short)
        if not hooks:
            return result
        return chained(
            result,
            hooks,
            lambda hook, call: hook.rewrite_call(site, original, cast(cst.Call, call), name),
            cst.Call,
        )

    def generic(self, original: cst.CSTNode, result: Any) -> Any:
        """A node of a class with generic hooks (`node_slot`): its hooks over its lookup keys, most
        specific first, each given the node as the previous one left it."""
        cls = original.__class__
        keyed = self.registry.keyed(node_slot(cls))
        site = self.site
        hooks = ((key, hook) for key in keys_of(original, site.qualify) for hook in keyed.get(key, ()))
        return chained(
            result,
            hooks,
            lambda keyed_hook, node: keyed_hook[1].rewrite(site, original, node, keyed_hook[0]),
            cls,
        )


def _by_name_then_short(by_name: list[CallHook] | None, by_short: list[CallHook]) -> list[CallHook] | None:
    """The call hooks of a call: by its qualified name, and by its short name those of a class the
    qualified name has none of; in ascending `order`, then by name before by short name."""
    classes = {type(hook) for hook in by_name} if by_name else set()
    extra = [hook for hook in by_short if type(hook) not in classes]
    if not extra:
        return by_name
    return sorted([*(by_name or ()), *extra], key=lambda hook: hook.order)
