"""MethodRenameRule: rename a method call by name alone, `x.cuda(...)` -> `x.npu(...)`.

A heuristic: the receiver's type is not known statically. It never touches a method whose
receiver resolves to an imported module, nor an attribute that is not called (`args.cuda`).

Code: `MethodRename.rewrite_method_call`, a method hook (engine/interface/hooks.py) keyed by the method's name;
who owns the name in the file is read by engine/naming/ownership.py.
"""

from collections.abc import Hashable
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.interface import METHODS, Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind


@kind(
    name="MethodRenameRule",
    schema={
        "required": ["method", "new_method"],
        "properties": {"method": {"type": "string"}, "new_method": {"type": "string"}},
    },
    message=".{old}(...) -> .{new}(...)",
    heuristic=True,
)
class MethodRenameRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        return [(k, p) for k in ("method", "new_method") if (p := checks.identifier(entry[k]))]

    @staticmethod
    def summary(entry: Entry) -> str:
        return f"method call .{entry['method']}(...) -> .{entry['new_method']}(...) (by name)"

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["method"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            tables.hooks.put(METHODS, rule.params["method"], MethodRename(rule, rule.params["new_method"]))
            tables.add_name_trigger(rule.params["method"])


@dataclass(frozen=True)
class MethodRename:
    """`x.method(...)` -> `x.new(...)` by name; kept, and reported once, where the file defines the method."""

    rule: Rule
    new: str | None

    def rewrite_method_call(self, site: Site, original: cst.Call, updated: cst.Call) -> cst.Call:
        """The call with the method renamed (the engine hands only calls of `x.method`)."""
        func, new_func = original.func, updated.func
        if self.new is None or not isinstance(func, cst.Attribute) or not isinstance(new_func, cst.Attribute):
            return updated
        if site.names.own_method(func):
            self.keep(site, original, func.attr.value)
            return updated
        site.report(original, self.rule, Operation.MODIFY, heuristic=True, old=func.attr.value, new=self.new)
        return updated.with_changes(
            func=new_func.with_changes(attr=new_func.attr.with_changes(value=self.new))
        )

    def keep(self, site: Site, node: cst.CSTNode, name: str) -> None:
        """A call of a name the file defines itself: it is not the library's function, say so once."""
        if site.names.first_keep(name):
            message = f"{name} kept: this file defines its own {name}; where a call means the library's, write {self.new}"
            site.report_kept(node, self.rule, message)
