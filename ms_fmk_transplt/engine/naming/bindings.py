"""Which names a module binds other than by import, for renames that must not break a binding.

A user rule that renames a bare function (`apply_rotary -> npu_apply_rotary`) can rename the
import that binds it and every use only when nothing else in the file binds or exports that name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ms_fmk_transplt.engine.syntax import NodeIndex


@dataclass
class Bindings:
    """Names bound by definitions, assignments, parameters, ...; `defined` holds def/class names only."""

    bound: set[str] = field(default_factory=set)
    defined: set[str] = field(default_factory=set)
    exported: set[str] = field(default_factory=set)  # strings listed in __all__
    imported: set[str] = field(default_factory=set)  # names any import binds


def collect_bindings(module: cst.Module | NodeIndex) -> Bindings:
    """Every name the module binds (at any depth), by kind of binding."""
    nodes = module if isinstance(module, NodeIndex) else NodeIndex(module)
    found = Bindings()
    bound = found.bound

    def target(node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            bound.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                target(element.value)
        elif isinstance(node, cst.StarredElement):
            target(node.value)

    for definition in nodes.of_any(cst.FunctionDef, cst.ClassDef):
        bound.add(definition.name.value)
        found.defined.add(definition.name.value)
    bound.update(param.name.value for param in nodes.of(cst.Param))
    for node in nodes.of_any(cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor):
        target(node.target)
    for node in nodes.of_any(cst.NamedExpr, cst.Del):
        target(node.target)
    for item in nodes.of(cst.WithItem):
        if item.asname is not None:
            target(item.asname.name)
    for handler in nodes.of(cst.ExceptHandler):
        if handler.name is not None:
            target(handler.name.name)
    for scope in nodes.of_any(cst.Global, cst.Nonlocal):
        bound.update(item.name.value for item in scope.names)
    bound.update(match.name.value for match in nodes.of(cst.MatchAs) if match.name is not None)
    found.exported = exported_names(nodes)
    for statement in nodes.of(cst.Import):
        found.imported.update(_bound_name(alias, root=True) for alias in statement.names)
    for from_import in nodes.of(cst.ImportFrom):
        if not isinstance(from_import.names, cst.ImportStar):
            found.imported.update(_bound_name(alias, root=False) for alias in from_import.names)
    return found


class NameClaims:
    """Which bare names a module already claims, for a rename that would bind a new one.

    A rename of an imported name (`from apex.normalization import FusedLayerNorm` to `LayerNorm`)
    may take the new name only where the module does not spell it at all: not bound by an import,
    a def, a class, a parameter or an assignment, at any depth, nor loaded from a star import or
    the builtins. `__all__` and importers name the old one, so an exported name is kept too. Asked
    for a few imports per run, so the walk happens on the first question.
    """

    def __init__(self, module: cst.Module | NodeIndex) -> None:
        self._module = module
        self._spoken: set[str] | None = None
        self._exported: set[str] | None = None

    def _nodes(self) -> NodeIndex:
        if not isinstance(self._module, NodeIndex):
            self._module = NodeIndex(self._module)
        return self._module

    def spoken(self, name: str) -> bool:
        """The module spells `name` as a name somewhere (attribute names and keywords are labels)."""
        if self._spoken is None:
            nodes = self._nodes()
            labels = {id(attribute.attr) for attribute in nodes.of(cst.Attribute)}
            labels.update(id(arg.keyword) for arg in nodes.of(cst.Arg) if arg.keyword is not None)
            self._spoken = {node.value for node in nodes.of(cst.Name) if id(node) not in labels}
        return name in self._spoken

    def exported(self, name: str) -> bool:
        """`__all__` lists `name`."""
        if self._exported is None:
            self._exported = exported_names(self._nodes())
        return name in self._exported


def exported_names(nodes: NodeIndex) -> set[str]:
    """The strings `__all__ = [...]` lists."""
    found: set[str] = set()
    for assign in nodes.of(cst.Assign):
        names = [t.target for t in assign.targets if isinstance(t.target, cst.Name)]
        if any(n.value == "__all__" for n in names) and isinstance(assign.value, (cst.List, cst.Tuple)):
            for element in assign.value.elements:
                if isinstance(element.value, cst.SimpleString):
                    value = element.value.evaluated_value
                    if isinstance(value, str):
                        found.add(value)
    return found


def _bound_name(alias: cst.ImportAlias, root: bool) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name: cst.BaseExpression = alias.name
    while isinstance(name, cst.Attribute):
        if not root:
            return name.attr.value
        name = name.value
    return name.value if isinstance(name, cst.Name) else ""


def own_methods(nodes: NodeIndex) -> dict[str, set[str]]:
    """Method name -> the classes of the module that define it."""
    found: dict[str, set[str]] = {}
    for cls in nodes.of(cst.ClassDef):
        for statement in cls.body.body:
            if isinstance(statement, cst.FunctionDef):
                found.setdefault(statement.name.value, set()).add(cls.name.value)
    return found


def assigned_attributes(nodes: NodeIndex) -> set[tuple[str, str]]:
    """The attributes the module assigns, as (object as code, name): `obj.name = ...`, `obj.name += ...`."""
    found: set[tuple[str, str]] = set()

    def add(target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute):
            found.add((code_of(target.value), target.attr.value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                add(element.value)

    for node in nodes.of_any(cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For):
        add(node.target)
    return found


def code_of(node: cst.CSTNode) -> str:
    """The node as source text."""
    return cst.Module(body=[]).code_for_node(node)
