"""Uses of a call's result that break on the NPU (`major, minor = torch.cuda.get_device_capability()`).

The transformer tells this module about each assignment, loop, subscript and comparison in
traversal order; it finds the uses of a result that a `ResultHook` is keyed by (directly, or
through the variable or `self` attribute it was bound to) and hands each to the hook, once per
statement and name.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ms_fmk_transplt.engine.interface import RESULTS, HookRegistry, ResultHook, ResultUse, Site


class ResultUses:
    """The result-use checks of one module."""

    def __init__(self, hooks: HookRegistry, qualify: Callable[[cst.CSTNode], str | None], site: Site) -> None:
        # the qualified names of calls whose result breaks when used (a later rule replaces one)
        self.hooks: dict[str, ResultHook] = {
            name: found[-1] for name, found in hooks.keyed(RESULTS).items() if found
        }
        self.qualify = qualify
        self.site = site
        self.names: dict[str, tuple[ResultHook, str]] = {}  # `cap = ...`: name -> (hook, call's name)
        self.reported: set[tuple[str, ResultUse, str]] = set()  # this statement's (name, use, attribute)
        self.statement: cst.CSTNode | None = None

    def enter_statement(self, statement: cst.CSTNode) -> None:
        """A new statement line: `sm[0] * 10 + sm[1]` is one report per statement."""
        self.statement = statement
        self.reported = set()

    def _breaking(self, expr: cst.BaseExpression) -> tuple[ResultHook, str] | None:
        if isinstance(expr, cst.Call):
            name = self.qualify(expr.func)
            hook = self.hooks.get(name) if name else None
            return (hook, name) if hook is not None and name else None
        key = _bound_key(expr)
        return self.names.get(key) if key is not None else None

    def use(self, node: cst.CSTNode, expr: cst.BaseExpression, use: ResultUse) -> None:
        """`expr` is used as `use` at `node`: report it if it is a result a hook watches."""
        found = self._breaking(expr) if self.hooks else None
        if found is None:
            return
        hook, name = found
        through = ""
        bound = _bound_key(expr)
        if bound is not None:
            key = (bound, use, node.attr.value if isinstance(node, cst.Attribute) else "")
            if key in self.reported:
                return
            self.reported.add(key)
            through = bound
        hook.result_used(self.site, node, name, use, through)

    def assign(self, node: cst.Assign) -> None:
        """Unpacking is a use; binding to a name (or to `self.name`) makes its later uses count."""
        if not self.hooks:
            return
        found = self._breaking(node.value) if isinstance(node.value, cst.Call) else None
        for target in node.targets:
            if isinstance(target.target, (cst.Tuple, cst.List)):
                self.use(node, node.value, ResultUse.UNPACK)
            elif found is not None and (key := _bound_key(target.target)) is not None:
                self.names[key] = found

    def compare(self, node: cst.Comparison) -> None:
        """`==` / `!=` is an equality use, any other comparison but `is` an ordering one."""
        if not self.hooks or all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in node.comparisons):
            return
        equality = all(isinstance(c.operator, (cst.Equal, cst.NotEqual)) for c in node.comparisons)
        use = ResultUse.COMPARE_EQUAL if equality else ResultUse.ORDER
        for operand in (node.left, *(c.comparator for c in node.comparisons)):
            self.use(node, operand, use)


def _bound_key(expr: cst.BaseExpression) -> str | None:
    """What a result can be bound to and read back from: `props`, or `self.props` (a method's
    receiver, read in the class's other methods)."""
    if isinstance(expr, cst.Name):
        return expr.value
    if (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value in ("self", "cls")
    ):
        return f"{expr.value.value}.{expr.attr.value}"
    return None
