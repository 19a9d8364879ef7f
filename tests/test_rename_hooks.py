"""The rename-by-name hooks (MethodRename, AttributeRename, FunctionRename) through a small fake Site.

Each hook is a frozen dataclass of its kind module; the engine only decides when to call it (the
qualified name matched no rule). Here the site records the findings and `names` answers the
ownership questions the way engine/naming/ownership.py would for some file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from ms_fmk_transplt.engine.interface import Rule
from ms_fmk_transplt.engine.naming import Bindings
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset.kinds.attribute_rename_rule import AttributeRename
from ms_fmk_transplt.ruleset.kinds.func_name_modify_rule import FunctionRename
from ms_fmk_transplt.ruleset.kinds.method_rename_rule import MethodRename

RULE = Rule("T1", "MethodRenameRule", {}, "", "{old} -> {new}", "test")


@dataclass
class Names:
    """What engine/naming/ownership.py would answer for a file, given as data."""

    own_methods: set[str] = field(default_factory=set)  # methods a class of the file defines
    assigned: set[tuple[str, str]] = field(default_factory=set)  # (object as code, attribute)
    bindings: Bindings = field(default_factory=Bindings)
    kept: set[str] = field(default_factory=set)

    def own_method(self, func: cst.Attribute) -> bool:
        return (
            func.attr.value in self.own_methods
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        )

    def assigns(self, owner: cst.BaseExpression, attribute: str) -> bool:
        return (cst.Module(body=[]).code_for_node(owner), attribute) in self.assigned

    def assigns_anywhere(self, attribute: str) -> bool:
        return any(a == attribute for _, a in self.assigned)

    def unbound(self, name: str) -> bool:
        return name not in self.bindings.bound and name not in self.bindings.imported

    def first_keep(self, name: str) -> bool:
        first = name not in self.kept
        self.kept.add(name)
        return first


@dataclass
class FakeSite:
    names: Names = field(default_factory=Names)
    reports: list[tuple[str, Operation, dict[str, Any]]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def report(
        self, node: cst.CSTNode, rule: Rule, operation: Operation, heuristic: bool = False, **fields: Any
    ) -> None:
        self.reports.append((_code(node), operation, {"heuristic": heuristic, **fields}))

    def report_kept(self, node: cst.CSTNode, rule: Rule, message: str) -> None:
        self.kept.append(message)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _expr(text: str) -> Any:
    return cst.parse_expression(text)


def _call(hook: Any, method: str, text: str, site: FakeSite) -> str:
    node = _expr(text)
    return _code(getattr(hook, method)(site, node, node))


def test_method_rename_renames_and_reports_heuristic() -> None:
    site = FakeSite()
    assert _call(MethodRename(RULE, "npu"), "rewrite_method_call", "x.cuda(0)", site) == "x.npu(0)"
    assert site.reports == [("x.cuda(0)", Operation.MODIFY, {"heuristic": True, "old": "cuda", "new": "npu"})]


def test_method_rename_keeps_the_files_own_method_and_says_so_once() -> None:
    site = FakeSite(Names(own_methods={"cuda"}))
    hook = MethodRename(RULE, "npu")
    assert _call(hook, "rewrite_method_call", "self.cuda()", site) == "self.cuda()"
    assert _call(hook, "rewrite_method_call", "self.cuda(1)", site) == "self.cuda(1)"
    assert site.reports == []
    assert site.kept == [
        "cuda kept: this file defines its own cuda; where a call means the library's, write npu"
    ]
    # another receiver is not the file's method
    assert _call(hook, "rewrite_method_call", "model.cuda()", site) == "model.npu()"


def test_report_only_renames_change_nothing() -> None:
    site = FakeSite()
    assert _call(MethodRename(RULE, None), "rewrite_method_call", "x.cuda()", site) == "x.cuda()"
    assert _call(AttributeRename(RULE, None), "rewrite_attribute", "x.is_cuda", site) == "x.is_cuda"
    assert _call(FunctionRename(RULE, None), "rewrite_function_call", "f()", site) == "f()"
    assert site.reports == [] and site.kept == []


def test_attribute_rename_and_the_files_own_attributes() -> None:
    hook = AttributeRename(RULE, "is_npu")
    site = FakeSite()
    assert _call(hook, "rewrite_attribute", "t.is_cuda", site) == "t.is_npu"
    assert site.reports == [
        ("t.is_cuda", Operation.MODIFY, {"heuristic": True, "old": "is_cuda", "new": "is_npu"})
    ]
    owned = FakeSite(Names(assigned={("self", "is_cuda")}))
    assert _call(hook, "rewrite_attribute", "self.is_cuda", owned) == "self.is_cuda"  # its own: silent
    assert owned.kept == [] and owned.reports == []
    assert _call(hook, "rewrite_attribute", "t.is_cuda", owned) == "t.is_cuda"  # maybe a tensor's: reported
    assert owned.kept == [
        ".is_cuda kept: this file also assigns its own .is_cuda; if this one is a tensor's, write .is_npu"
    ]


def test_function_rename_calls_names_and_module_attributes() -> None:
    hook = FunctionRename(RULE, "npu_rotary")
    site = FakeSite()
    assert _call(hook, "rewrite_function_call", "rotary(q, k)", site) == "npu_rotary(q, k)"
    assert _call(hook, "rewrite_method_call", "ops.rotary(q)", site) == "ops.npu_rotary(q)"  # inherited form
    assert _call(hook, "rewrite_name", "rotary", site) == "npu_rotary"
    # `lib.rotary` only on a module the file imports and does not rebind
    assert hook.rewrite_attribute(site, _expr("lib.rotary"), _expr("lib.rotary")) is None
    imported = FakeSite(Names(bindings=Bindings(imported={"lib"})))
    assert _call(hook, "rewrite_attribute", "lib.sub.rotary", imported) == "lib.sub.npu_rotary"
    assert [r[2]["heuristic"] for r in site.reports] == [True, True, True]
    assert imported.reports == [
        ("lib.sub.rotary", Operation.MODIFY, {"heuristic": False, "old": "rotary", "new": "npu_rotary"})
    ]


def test_function_rename_keeps_a_name_the_file_binds() -> None:
    hook = FunctionRename(RULE, "npu_rotary")
    site = FakeSite(Names(bindings=Bindings(bound={"rotary"})))
    assert _call(hook, "rewrite_function_call", "rotary(q)", site) == "rotary(q)"
    assert _call(hook, "rewrite_function_call", "rotary(k)", site) == "rotary(k)"
    assert hook.rewrite_name(site, _expr("rotary"), _expr("rotary")) is None
    assert site.reports == []
    assert site.kept == [
        "rotary kept: this file defines its own rotary; where a call means the library's, write npu_rotary"
    ]
