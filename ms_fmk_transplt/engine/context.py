"""Is this string literal a device? One place answers it, from the rule data.

A literal that a StringLiteralRule's pattern matches (`"cuda"`, `"cuda:0"`) is a *device* when:
- it carries an index (`"cuda:0"`, `"cuda:%d"`): nobody names a folder that;
- it is an argument a device-taking API receives (`DeviceSpec.calls`, `DeviceSpec.keywords`);
- it is compared with something device-typed (`x.device.type == "cuda"`, `"cuda" in args.device`);
- it is bound to a device-named thing (`device = "cuda"`, `def f(device="cuda")`,
  `{"device": "cuda"}`, `add_argument("--device", default="cuda")`), or to a variable that the file
  passes to a device-taking API (`kind = "cuda"; torch.device(kind)`).
Anything else is the user's own text (`__all__ = ["cuda"]`, `dest="cuda"`,
`os.path.join(here, "cuda")`): kept, and reported only when nothing marks it as text.

The device-taking APIs, the device-named patterns and the text positions are rule data
(`device_context` of a StringLiteralRule), so a new API is a line of JSON.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import libcst as cst

from ms_fmk_transplt.engine.walk import NodeIndex


class Verdict(str, Enum):
    DEVICE = "device"  # convert it
    TEXT = "text"  # the user's words or names: keep it, say nothing
    UNKNOWN = "unknown"  # keep it, report it for a look by hand


@dataclass
class DeviceSpec:
    """Where device values go, merged from every StringLiteralRule's `device_context`."""

    calls: dict[str, set[int]] = field(default_factory=dict)  # qualified or method name -> positions
    keywords: set[str] = field(default_factory=set)
    names: list[re.Pattern[str]] = field(default_factory=list)  # device-typed expressions, as code
    option_keywords: set[str] = field(default_factory=set)  # add_argument(...) values: default=, choices=
    text_calls: set[str] = field(default_factory=set)  # every argument is text: os.path.join
    text_keywords: set[str] = field(default_factory=set)  # dest=
    text_targets: set[str] = field(default_factory=set)  # __all__

    def add(self, params: dict) -> None:
        for name, positions in params.get("calls", {}).items():
            self.calls.setdefault(name, set()).update(positions)
        self.keywords.update(params.get("keywords", ()))
        self.names.extend(re.compile(p) for p in params.get("names", ()))
        self.option_keywords.update(params.get("option_keywords", ()))
        self.text_calls.update(params.get("text_calls", ()))
        self.text_keywords.update(params.get("text_keywords", ()))
        self.text_targets.update(params.get("text_targets", ()))

    def device_named(self, code: str) -> bool:
        return any(p.fullmatch(code) for p in self.names)


def _code(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):  # the common case, without printing
        return node.value
    return cst.Module(body=[]).code_for_node(node)


def _short(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


def literals(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The string literals a value can evaluate to: itself, ternary branches, `or`, sequences."""
    if isinstance(node, (cst.SimpleString, cst.FormattedString)):
        yield node
    elif isinstance(node, cst.IfExp):
        yield from literals(node.body)
        yield from literals(node.orelse)
    elif isinstance(node, cst.BooleanOperation):
        yield from literals(node.left)
        yield from literals(node.right)
    elif isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        for element in node.elements:
            yield from literals(element.value)
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Modulo, cst.Add)):
        yield from literals(node.left)  # "cuda:%d" % rank, "cuda:" + str(rank)
    elif (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
    ):
        yield from literals(node.func.value)  # "cuda:{}".format(rank)


class DeviceContext:
    """Marks the literals of one module as devices or text; the transformer asks `verdict`."""

    def __init__(self, spec: DeviceSpec, qualify: Callable[[cst.CSTNode], str | None]) -> None:
        self.spec = spec
        self.qualify = qualify
        self.devices: set[int] = set()
        self.text: set[int] = set()
        self.flow_names: set[str] = set()  # variables the file passes to a device-taking API
        self.prefixes: set[int] = set()  # "cuda:" + str(rank): the left operand of a concatenation

    # ---- the module-wide pass: which variables flow into device-taking APIs ----------------------
    def scan(self, module: cst.Module | NodeIndex) -> None:
        nodes = module if isinstance(module, NodeIndex) else NodeIndex(module)
        calls = nodes.of(cst.Call)
        for call in calls:  # first every variable that reaches a device API, wherever it is used
            for arg in self.device_slots(call):
                if isinstance(arg.value, cst.Name):
                    self.flow_names.add(arg.value.value)
        marker = _Marker(self)
        handlers: tuple[tuple[type[cst.CSTNode], Callable[[Any], None]], ...] = (
            (cst.Call, marker.visit_Call),
            (cst.BinaryOperation, marker.visit_BinaryOperation),
            (cst.Comparison, marker.visit_Comparison),
            (cst.Assign, marker.visit_Assign),
            (cst.AnnAssign, marker.visit_AnnAssign),
            (cst.Param, marker.visit_Param),
            (cst.DictElement, marker.visit_DictElement),
            (cst.Arg, marker.visit_Arg),
        )
        for cls, mark in handlers:
            for node in nodes.of(cls):
                mark(node)

    def device_slots(self, call: cst.Call) -> Iterator[cst.Arg]:
        """The arguments of `call` that take a device."""
        positions = self.spec.calls.get(self.qualify(call.func) or "", set()) | self.spec.calls.get(
            _short(call.func), set()
        )
        index = 0
        for arg in call.args:
            if arg.keyword is not None:
                if arg.keyword.value in self.spec.keywords:
                    yield arg
                continue
            if arg.star:
                break
            if index in positions:
                yield arg
            index += 1

    def device_typed(self, node: cst.BaseExpression) -> bool:
        """`x.device`, `x.device.type`, `args.device`, `str(x.device)`, a variable fed to a device API."""
        if isinstance(node, cst.Call) and _short(node.func) == "str" and len(node.args) == 1:
            return self.device_typed(node.args[0].value)
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return False
        if isinstance(node, cst.Name) and node.value in self.flow_names:
            return True
        return self.spec.device_named(_code(node))

    def mark(self, values: Iterable[cst.BaseExpression], into: set[int]) -> None:
        for value in values:
            for literal in literals(value):
                into.add(id(literal))

    def matches(self, node: cst.BaseExpression, value: str, pattern: re.Pattern[str], old: str) -> bool:
        """Does the rule's pattern take this literal (a concatenation's `old + ":"` prefix too)?"""
        return bool(pattern.fullmatch(value)) or (id(node) in self.prefixes and value == old + ":")

    def verdict(self, node: cst.BaseExpression, value: str, old: str) -> Verdict:
        if id(node) in self.devices:
            return Verdict.DEVICE
        if id(node) in self.text:
            return Verdict.TEXT
        if value != old or id(node) in self.prefixes:  # "cuda:0", "cuda:%d", "cuda:" + str(rank)
            return Verdict.DEVICE
        return Verdict.UNKNOWN


class _Marker:
    """Marks device literals and text literals by where they stand (each kind of node in any order)."""

    def __init__(self, context: DeviceContext) -> None:
        self.c = context

    def visit_Call(self, node: cst.Call) -> None:
        c = self.c
        c.mark((a.value for a in c.device_slots(node)), c.devices)
        name = self.c.qualify(node.func) or _short(node.func)
        if name in c.spec.text_calls or _short(node.func) in c.spec.text_calls:
            c.mark((a.value for a in node.args), c.text)
        c.mark((a.value for a in node.args if a.keyword and a.keyword.value in c.spec.text_keywords), c.text)
        if _short(node.func) == "add_argument":
            options = [
                a.value for a in node.args if a.keyword is None and isinstance(a.value, cst.SimpleString)
            ]
            named = any(
                c.spec.device_named(str(o.evaluated_value).lstrip("-").replace("-", "_")) for o in options
            )
            if named:
                chosen = (
                    a.value for a in node.args if a.keyword and a.keyword.value in c.spec.option_keywords
                )
                c.mark(chosen, c.devices)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        left = node.left
        if isinstance(node.operator, cst.Add) and isinstance(left, cst.SimpleString):
            value = left.evaluated_value
            if isinstance(value, str) and value.endswith(":"):
                self.c.prefixes.add(id(left))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        parts = [node.left, *(t.comparator for t in node.comparisons)]
        if any(self.c.device_typed(p) for p in parts):
            self.c.mark(parts, self.c.devices)

    def _bind(self, targets: Iterable[cst.BaseExpression], value: cst.BaseExpression | None) -> None:
        if value is None:
            return
        for target in targets:
            if isinstance(target, cst.Name) and target.value in self.c.spec.text_targets:
                self.c.mark([value], self.c.text)
            elif self.c.device_typed(target):
                self.c.mark([value], self.c.devices)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._bind((t.target for t in node.targets), node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind([node.target], node.value)

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is not None:
            self._bind([node.name], node.default)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if isinstance(node.key, cst.SimpleString):
            key = node.key.evaluated_value
            if isinstance(key, str) and self.c.spec.device_named(key):
                self.c.mark([node.value], self.c.devices)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and self.c.spec.device_named(node.keyword.value):
            self.c.mark([node.value], self.c.devices)
