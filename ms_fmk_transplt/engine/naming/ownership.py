"""Who owns a short name in this file: the evidence the rename-by-name hooks decide on.

MethodRenameRule, AttributeRenameRule and FuncNameModifyRule's bare names match a short name,
not a qualified one (their hooks live in their kind modules, engine/interface/hooks.py says how they are
called). Whether a use is the library's or the user's own is read from the file here: a class of
the file defining the method, the file assigning the attribute, a def or assignment binding the
function's name. A name the file owns is kept and reported once.
"""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.naming.bindings import (
    Bindings,
    assigned_attributes,
    code_of,
    collect_bindings,
    own_methods,
)
from ms_fmk_transplt.engine.naming.name_uses import NameUses
from ms_fmk_transplt.engine.syntax import NodeIndex


class NameOwnership:
    """Per-file facts about short names, computed only for the rename tables the run has."""

    def __init__(
        self, nodes: NodeIndex, uses: NameUses, functions: bool, methods: bool, attributes: bool
    ) -> None:
        """`functions`, `methods`, `attributes`: the run renames some of these by short name."""
        self.uses = uses
        # names bound by defs, assignments, parameters, imports: a bare function name the file binds is its own
        self.bindings = collect_bindings(nodes) if functions else Bindings()
        # method name -> the classes of this file that define it: `self.cuda()` there is the user's
        self.own_methods = own_methods(nodes) if methods else {}
        # `self.is_cuda = ...`: an attribute the file assigns is the user's, never Tensor.is_cuda
        # (object as code, attribute)
        self.assigned_attributes = assigned_attributes(nodes) if attributes else set()
        self._kept: set[str] = set()

    def own_method(self, func: cst.Attribute) -> bool:
        """`self.cuda()` in a file whose class defines `cuda`, `Wrapper().cuda()` of such a class."""
        owners = self.own_methods.get(func.attr.value)
        if not owners:
            return False
        receiver = func.value
        if isinstance(receiver, cst.Name):
            return receiver.value in ("self", "cls")
        return (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Name)
            and receiver.func.value in owners
        )

    def assigns(self, owner: cst.BaseExpression, attribute: str) -> bool:
        """The file assigns `attribute` on this very object (`self.is_cuda = ...` and `self.is_cuda`)."""
        return (code_of(owner), attribute) in self.assigned_attributes

    def assigns_anywhere(self, attribute: str) -> bool:
        """The file assigns an attribute of this name on some object."""
        return any(a == attribute for _, a in self.assigned_attributes)

    def unbound(self, name: str) -> bool:
        """Neither bound nor imported anywhere in the file (a star import may have brought it)."""
        return name not in self.bindings.bound and name not in self.bindings.imported

    def first_keep(self, name: str) -> bool:
        """True the first time a kept `name` is reported in this file: one report per name."""
        if name in self._kept:
            return False
        self._kept.add(name)
        return True
