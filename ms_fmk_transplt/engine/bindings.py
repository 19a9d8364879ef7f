"""Which names a module binds other than by import, for renames that must not break a binding.

A user rule that renames a bare function (`apply_rotary -> npu_apply_rotary`) can rename the
import that binds it and every use only when nothing else in the file binds or exports that name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst


@dataclass
class Bindings:
    """Names bound by definitions, assignments, parameters, ...; `defined` holds def/class names only."""

    bound: set[str] = field(default_factory=set)
    defined: set[str] = field(default_factory=set)
    exported: set[str] = field(default_factory=set)  # strings listed in __all__
    imported: set[str] = field(default_factory=set)  # names any import binds


def collect_bindings(module: cst.Module) -> Bindings:
    """Every name the module binds (at any depth), by kind of binding."""
    found = Bindings()
    module.visit(_Collector(found))
    return found


class _Collector(cst.CSTVisitor):
    def __init__(self, into: Bindings) -> None:
        super().__init__()
        self.into = into

    def _target(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            self.into.bound.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self._target(element.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.into.bound.add(node.name.value)
        self.into.defined.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.into.bound.add(node.name.value)
        self.into.defined.add(node.name.value)

    def visit_Param(self, node: cst.Param) -> None:
        self.into.bound.add(node.name.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_Assign(self, node: cst.Assign) -> None:
        names = [t.target for t in node.targets if isinstance(t.target, cst.Name)]
        if any(n.value == "__all__" for n in names) and isinstance(node.value, (cst.List, cst.Tuple)):
            for element in node.value.elements:
                if isinstance(element.value, cst.SimpleString):
                    value = element.value.evaluated_value
                    if isinstance(value, str):
                        self.into.exported.add(value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._target(node.name.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        self.into.bound.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.into.bound.update(item.name.value for item in node.names)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self.into.bound.add(node.name.value)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            self.into.imported.add(_bound_name(alias, root=True))
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                self.into.imported.add(_bound_name(alias, root=False))
        return False


def _bound_name(alias: cst.ImportAlias, root: bool) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name: cst.BaseExpression = alias.name
    while isinstance(name, cst.Attribute):
        if not root:
            return name.attr.value
        name = name.value
    return name.value if isinstance(name, cst.Name) else ""
