"""FuncNameModifyRule (porting guide): rename a function.

A dotted `old_name` (`torch.cuda.synchronize`) matches every reference that resolves to it
through the file's imports: `torch.cuda.synchronize()`, `tc.synchronize` after
`import torch.cuda as tc`, `from torch.cuda import synchronize`; called or not. A bare
`old_name` (`func`) is a heuristic: it matches calls `func(...)` and method calls `x.func(...)`
by name alone, and un-called uses of a name the file binds nowhere (`from lib import *`), and
`new_name` must then be a bare name too. A function imported by name,
`from lib import func` (also relative), is renamed consistently: the import becomes
`from lib import new_func` and every use, called or not, follows; `from lib import func as f`
becomes `from lib import new_func as f`. Where renaming the binding could break the file (it
binds `func` itself as well, `__all__` exports it, or it already spells `new_func` anywhere:
bound at any depth, a parameter, or loaded from a star import or the builtins), the import
becomes `from lib import new_func as func`, which changes what the name means and nothing else,
and the finding says why. A dotted rename whose last part changes treats a `from` import the
same way: `from apex.normalization import FusedLayerNorm` becomes `from torch.nn import
LayerNorm` with its uses, or `... import LayerNorm as FusedLayerNorm` where `LayerNorm` is
taken. `lib.func` on an imported module is renamed called or not. A file that defines its own `func` keeps its calls and gets one report: by name alone a
call cannot be told from the library's.

Code: `FunctionRename.rewrite_function_call` (with `rewrite_name`, `rewrite_attribute` and the method
form it inherits from MethodRename), a function hook (engine/interface/hooks.py) for bare names; a dotted
name is a `QualifiedFunctionRename` (a `Rename` of module_name_modify_rule.py), a name hook keyed
by the qualified name, and imports by name are planned in engine/importing/imports.py.
"""

from collections.abc import Hashable
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.interface import FUNCTIONS, METHODS, Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.kinds.method_rename_rule import MethodRename
from ms_fmk_transplt.ruleset.kinds.module_name_modify_rule import Rename
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="FuncNameModifyRule",
    schema={
        "required": ["old_name", "new_name"],
        "properties": {"old_name": {"type": "string"}, "new_name": {"type": "string"}},
    },
    message="{old} -> {new}",
)
class FuncNameModifyRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        problems = [(k, p) for k in ("old_name", "new_name") if (p := checks.dotted_name(entry[k]))]
        if not problems and "." not in entry["old_name"] and "." in entry["new_name"]:
            problems.append(
                ("new_name", "a bare old_name renames by name alone, so new_name must be a bare name too")
            )
        if not problems and entry["old_name"] == entry["new_name"]:
            problems.append(("new_name", "new_name is the same as old_name"))
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"rename function {entry['old_name']} to {entry['new_name']}"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["old_name"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            old, new = rule.params["old_name"], rule.params["new_name"]
            entry = QualifiedFunctionRename(
                rule, *tables.opt_in(rule, new, rule.params.get("suggestion", ""))
            )
            if "." in old:
                entry.put(tables, old)
            else:
                hook = FunctionRename(rule, entry.new)
                tables.hooks.put(METHODS, old, hook)
                tables.hooks.put(FUNCTIONS, old, hook)
            tables.add_name_trigger(old)


@dataclass(frozen=True)
class FunctionRename(MethodRename):
    """A bare function name renamed where no import binds it: `func()`, `x.func()`, `f = func`, `lib.func`."""

    def rewrite_function_call(self, site: Site, original: cst.Call, updated: cst.Call) -> cst.Call:
        """`func(...)` renamed; kept, and reported once, where the file binds `func` itself."""
        func, new_func = original.func, updated.func
        if self.new is None or not isinstance(func, cst.Name) or not isinstance(new_func, cst.Name):
            return updated
        if func.value in site.names.bindings.bound:
            self.keep(site, original, func.value)
            return updated
        site.report(original, self.rule, Operation.MODIFY, heuristic=True, old=func.value, new=self.new)
        return updated.with_changes(func=new_func.with_changes(value=self.new))

    def rewrite_name(self, site: Site, original: cst.Name, updated: cst.Name) -> cst.Name | None:
        """An un-called `func` bound nowhere in the file (a star import brought it): renamed as its calls are."""
        if self.new is None or not site.names.unbound(original.value):
            return None
        site.report(original, self.rule, Operation.MODIFY, heuristic=True, old=original.value, new=self.new)
        return updated.with_changes(value=self.new)

    def rewrite_attribute(
        self, site: Site, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression | None:
        """`lib.func` passed around un-called, on a module the file imports: the same rename as calls."""
        root = original.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if self.new is None or not isinstance(root, cst.Name):
            return None
        if root.value not in site.names.bindings.imported or root.value in site.names.bindings.bound:
            return None
        site.report(original, self.rule, Operation.MODIFY, old=original.attr.value, new=self.new)
        return updated.with_changes(attr=updated.attr.with_changes(value=self.new))


@dataclass(frozen=True)
class QualifiedFunctionRename(Rename):
    """A dotted function name renamed wherever the file's imports lead to it, called or not."""
