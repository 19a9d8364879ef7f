"""Renames by name alone: methods (`x.cuda()`), attributes (`x.is_cuda`) and bare functions;
and names a rule rewrites spelled as strings (`getattr(torch, "cuda")`), reported.

These rules (MethodRenameRule, AttributeRenameRule and FuncNameModifyRule's unimported names)
match a short name, not a qualified one, so the evidence that a use is the library's and not the
user's own lives here: a class of the file defining the method, the file assigning the attribute,
a def or assignment binding the function's name. Where the file owns the name the use is kept
and reported once, saying what to write where the library's was meant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from ms_fmk_transplt.engine.bindings import Bindings, assigned_attributes, collect_bindings, own_methods
from ms_fmk_transplt.engine.imports import plan_function_imports
from ms_fmk_transplt.engine.name_uses import NameUses
from ms_fmk_transplt.engine.tables import Rename, Tables
from ms_fmk_transplt.engine.walk import NodeIndex
from ms_fmk_transplt.records import Operation

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.site_reports import SiteReports


class NameRenames:
    """Applies the rename-by-name tables for one module, reporting through `site`."""

    def __init__(
        self,
        site: SiteReports,
        tables: Tables,
        nodes: NodeIndex,
        uses: NameUses,
        imports: Sequence[tuple[cst.SimpleStatementLine, cst.Import | cst.ImportFrom]],
        qualify: Callable[[cst.CSTNode], str | None],
    ) -> None:
        self.site, self.tables, self.uses, self.qualify = site, tables, uses, qualify
        # user rules renaming a bare function name: the import that binds it, then its uses
        self.bindings = collect_bindings(nodes) if tables.functions else Bindings()
        # method name -> the classes of this file that define it: `self.cuda()` there is the user's
        self.own_methods = own_methods(nodes) if tables.methods else {}
        # `self.is_cuda = ...`: an attribute the file assigns is the user's, never Tensor.is_cuda
        self.assigned_attributes = assigned_attributes(nodes) if tables.attributes else set()
        # bound name -> (new name, rule); id(import alias) -> (new name, name kept bound or None, why)
        self.function_renames, self.function_imports = plan_function_imports(tables, imports, self.bindings)
        self._kept_functions: set[str] = set()

    # ---- bare names -----------------------------------------------------------------------------
    def rename_name(self, original: cst.Name, updated: cst.Name) -> cst.Name | None:
        """A function renamed where its import was, or an unimported one bound nowhere in the file."""
        function = self.function_renames.get(original.value)
        if function is not None and self.uses.is_load(original):
            new_name, rule = function
            self.site.report(original, rule, Operation.MODIFY, old=original.value, new=new_name)
            return updated.with_changes(value=new_name)
        if self.tables.functions and self.uses.is_load(original) and not self.uses.is_called(original):
            # un-called and bound nowhere in the file (a star import): renamed as its calls are
            value = original.value
            entry = self.tables.functions.get(value)
            if (
                entry is not None
                and entry.new is not None
                and value not in self.bindings.bound
                and value not in self.bindings.imported
            ):
                self.site.report(
                    original, entry.rule, Operation.MODIFY, heuristic=True, old=value, new=entry.new
                )
                return updated.with_changes(value=entry.new)
        return None

    # ---- attributes no qualified name matched ----------------------------------------------------
    def rename_attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        """`lib.func` passed around un-called, or `x.is_cuda` by attribute name."""
        attr = original.attr.value
        if self.tables.functions and not self.uses.is_called(original):
            function = self.tables.functions.get(attr)
            root = original.value
            while isinstance(root, cst.Attribute):
                root = root.value
            # `lib.func` passed around un-called, on a module the file imports: the same rename as calls
            if (
                function is not None
                and function.new is not None
                and isinstance(root, cst.Name)
                and root.value in self.bindings.imported
                and root.value not in self.bindings.bound
            ):
                self.site.report(original, function.rule, Operation.MODIFY, old=attr, new=function.new)
                return updated.with_changes(attr=updated.attr.with_changes(value=function.new))
        entry = self.tables.attributes.get(attr)
        if entry is None or entry.new is None:
            return updated
        if (_code(original.value), attr) in self.assigned_attributes:
            return updated
        if any(a == attr for _, a in self.assigned_attributes):
            self.site.report_kept(
                original,
                entry.rule,
                f".{attr} kept: this file also assigns its own .{attr}; if this one is a tensor's,"
                f" write .{entry.new}",
            )
            return updated
        self.site.report(original, entry.rule, Operation.MODIFY, heuristic=True, old=attr, new=entry.new)
        return updated.with_changes(attr=updated.attr.with_changes(value=entry.new))

    # ---- calls no qualified name resolved --------------------------------------------------------
    def rename_call(
        self, original: cst.Call, updated: cst.Call, resolved: bool, name: str | None
    ) -> cst.Call:
        """`x.cuda()` -> `x.npu()` by method name; `func()` by bare name when nothing imports it."""
        func = original.func
        if isinstance(func, cst.Attribute) and not resolved and isinstance(updated.func, cst.Attribute):
            entry = self.tables.methods.get(func.attr.value)
            if entry is not None and entry.new is not None and self.own_method(func):
                self._keep_function(original, entry, func.attr.value)
            elif entry is not None and entry.new is not None:
                self.site.report(
                    original, entry.rule, Operation.MODIFY, heuristic=True, old=func.attr.value, new=entry.new
                )
                return updated.with_changes(
                    func=updated.func.with_changes(attr=updated.func.attr.with_changes(value=entry.new))
                )
        elif (
            isinstance(func, cst.Name)
            and name is None
            and isinstance(updated.func, cst.Name)
            and func.value not in self.bindings.imported  # the import's rename covers it
        ):
            entry = self.tables.functions.get(func.value)
            if entry is not None and entry.new is not None and func.value in self.bindings.bound:
                self._keep_function(original, entry, func.value)
            elif entry is not None and entry.new is not None:
                self.site.report(
                    original, entry.rule, Operation.MODIFY, heuristic=True, old=func.value, new=entry.new
                )
                return updated.with_changes(func=updated.func.with_changes(value=entry.new))
        return updated

    def name_by_string(self, call: cst.Call, owner: cst.BaseExpression, attr: cst.BaseExpression) -> None:
        """`getattr(torch, "cuda")`: the name a rule rewrites, spelled as a string, is reported."""
        base = self.qualify(owner)
        if base is None or not isinstance(attr, cst.SimpleString):
            return
        value = attr.evaluated_value
        if not isinstance(value, str):
            return
        match = self.tables.lookup(f"{base}.{value}")
        if match is None or match.prefix != f"{base}.{value}":
            return
        target = f"the string {value!r} (write {match.new.rsplit('.', 1)[-1]!r})" if match.new else ""
        message = f"{match.prefix} looked up by name is not converted; change {target or 'it by hand'}"
        self.site.report_message(call, match.rule, Operation.UNSUPPORTED, message)

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

    def _keep_function(self, node: cst.CSTNode, entry: Rename, name: str) -> None:
        """A call of a name the file defines itself: it is not the library's function, say so once."""
        if name in self._kept_functions:
            return
        self._kept_functions.add(name)
        self.site.report_kept(
            node,
            entry.rule,
            f"{name} kept: this file defines its own {name}; where a call means the library's, write {entry.new}",
        )


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
