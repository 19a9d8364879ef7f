"""Is this string literal a device? The device evidence of the role pass (engine/literals/roles.py).

A literal that a StringLiteralRule's pattern matches (`"cuda"`, `"cuda:0"`) is a *device* when:
- it carries an index (`"cuda:0"`, `"cuda:%d"`): nobody names a folder that;
- it is an argument a device-taking API receives (`DeviceSpec.calls`, the torch callables
  derived from the pinned torch in data/torch_device_apis.json, `DeviceSpec.keywords`; also
  through `functools.partial(torch.autocast, "cuda")`);
- it is compared with something device-typed (`x.device.type == "cuda"`, `"cuda" in args.device`,
  `devices[0] == "cuda"`, `args.device.startswith("cuda")`, `case "cuda":` of `match dev.type`);
- it is bound to a device-named thing (`device = "cuda"`, `DEFAULT_DEVICE = "cuda"`,
  `cfg.MODEL.DEVICE = "cuda"`, `def f(device="cuda")`, `device: str = field(default="cuda")`,
  `{"device": "cuda"}`, `setattr(ns, "device", "cuda")`, `add_argument("--device",
  default="cuda")`, a member of an Enum named like a device), or to a variable that the file
  passes to a device-taking API (`kind = "cuda"; torch.device(kind)`);
- it is a member of the Literal type of a device-named target (`device: Literal["cuda"] = "cuda"`,
  `def f(device: Optional[Literal["cuda", "cpu"]] = None)`): the type follows the value;
- by convention: it stands beside another device type (`"cuda" if ok else "cpu"`,
  `["cpu", "cuda"]`, `Literal["cpu", "cuda"]`), or a CUDA test picks it (`"cuda" if torch.cuda.is_available() else x`),
  or a dict of device types is looked up by one (`{"cuda": "nccl"}[device.type]`).
Anything else is the user's own text (`__all__ = ["cuda"]`, `dest="cuda"`,
`os.path.join(here, "cuda")`): kept.

The device-taking APIs, the device-named patterns and the text positions are rule data
(`device_context` of a StringLiteralRule), so a new API is a line of JSON. Each mark carries the
evidence, a short phrase `explain` prints; evidence that is convention, not proof, says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import libcst as cst
import libcst.matchers as m

from ms_fmk_transplt import data
from ms_fmk_transplt.engine.devices.device_flow import (
    DeviceFlow,
    choices,
    option_fields,
    own_attribute,
    returns,
)
from ms_fmk_transplt.engine.devices.project_calls import ProjectCalls
from ms_fmk_transplt.engine.project import FirstParty
from ms_fmk_transplt.engine.syntax import NodeIndex, short_name

CONVENTION = " (convention)"
PATH_PIECE = "a path piece given to "  # text that could still be a device: kept, reported
ACCELERATOR = "a Lightning accelerator name "  # Lightning has no "npu" accelerator: kept, reported
NAME_PIECE = "a piece of the text "  # f"{'cuda' if c else 'cpu'}_time_total": kept, reported
ECHO = "the value the file's argument "  # parse(["--device=cuda:0"]); opts["device"] == "cuda:0"
REPORTED_TEXT = (PATH_PIECE, ACCELERATOR, NAME_PIECE, ECHO)
_ARGUMENT = re.compile(r"--?[\w.-]+=(.+)")  # one command-line argument with its value
_DEVICE_TAIL = re.compile(r"(:\w*)?")  # what an f-string may add to a device type and stay one


class DeviceAnswer(str, Enum):
    DEVICE = "device"  # convert it
    TEXT = "text"  # the user's words or names: keep it
    UNKNOWN = "unknown"  # keep it, report it for a look by hand


#: the `device_context` lists of plain names, merged as sets (the rule schema takes these keys)
NAME_LISTS = (
    "keywords",
    "option_keywords",
    "text_calls",
    "text_keywords",
    "text_targets",
    "device_types",
    "accelerator_types",
    "message_calls",
    "message_keywords",
    "message_continues",
    "option_calls",
    "attribute_name_calls",
    "backend_keywords",
    "env_calls",
    "env_setters",
    "dispatch_devices",
    "vendor_reads",
    "enumerating_keywords",
    "enumerating_calls",
    "cuda_only_apis",
)
#: the `device_context` lists of regular expressions
PATTERN_LISTS = (
    "names",
    "device_tests",
    "accelerator_names",
    "predicate_names",
    "identity_names",
    "cuda_only_strings",
)


@dataclass
class DeviceSpec:
    """Where device values go, merged from every StringLiteralRule's `device_context`."""

    calls: dict[str, set[int]] = field(default_factory=dict)  # qualified or method name -> positions
    call_keywords: dict[str, set[str]] = field(default_factory=dict)  # qualified name -> its own keywords
    keywords: set[str] = field(default_factory=set)
    names: list[re.Pattern[str]] = field(default_factory=list)  # device-typed expressions, as code
    option_keywords: set[str] = field(default_factory=set)  # add_argument(...) values: default=, choices=
    text_calls: set[str] = field(default_factory=set)  # every argument is text: os.path.join
    text_keywords: set[str] = field(default_factory=set)  # dest=
    text_targets: set[str] = field(default_factory=set)  # __all__
    device_types: set[str] = field(default_factory=set)  # "cpu", "mps": a sibling makes it a device
    device_tests: list[re.Pattern[str]] = field(default_factory=list)  # torch.cuda.is_available()
    accelerator_names: list[re.Pattern[str]] = field(default_factory=list)  # Lightning's accelerator=
    accelerator_types: set[str] = field(default_factory=set)  # "gpu", "auto": never a torch device
    # where literals are the user's words: the role pass reads these (engine/literals/roles.py)
    message_calls: set[str] = field(default_factory=set)
    message_keywords: set[str] = field(default_factory=set)
    message_continues: set[str] = field(default_factory=set)
    option_calls: set[str] = field(default_factory=set)
    attribute_name_calls: set[str] = field(default_factory=set)
    backend_keywords: set[str] = field(default_factory=set)
    env_calls: set[str] = field(default_factory=set)
    env_setters: set[str] = field(default_factory=set)
    # code written for several devices: the device-dispatch analysis reads these (engine/devices/dispatch_sites.py)
    predicates: dict[str, str] = field(default_factory=dict)  # torch.npu.is_available -> "npu"
    predicate_names: list[re.Pattern[str]] = field(
        default_factory=list
    )  # is_npu(): its group names the device
    identity_names: list[re.Pattern[str]] = field(default_factory=list)  # is_nvidia: a vendor, not a device
    dispatch_devices: set[str] = field(default_factory=set)  # "cuda", "npu", "hip": what a branch selects
    vendor_reads: set[str] = field(default_factory=set)  # get_device_capability: NVIDIA's or AMD's only
    enumerating_keywords: set[str] = field(default_factory=set)  # choices=[...]: every supported type
    enumerating_calls: set[str] = field(default_factory=set)  # parametrize(..., [...]), runs_on([...])
    # CUDA-only code a device test may guard (engine/devices/cuda_only.py): APIs by qualified name, strings
    cuda_only_apis: set[str] = field(default_factory=set)  # torch.backends.cudnn, triton
    cuda_only_strings: list[re.Pattern[str]] = field(default_factory=list)  # "aten::cudnn_.*", "*.cu"

    def add(self, params: dict[str, Any]) -> None:
        """Merge one rule's `device_context`."""
        if params.get("calls_from") == "torch":
            apis = data.torch_device_apis()
            for name, entry in (*apis["calls"].items(), *apis.get("methods", {}).items()):
                self.calls.setdefault(name, set()).update(entry["positions"])
                self.call_keywords.setdefault(name, set()).update(entry["keywords"])
        for name, positions in params.get("calls", {}).items():
            self.calls.setdefault(name, set()).update(positions)
        for name, keywords in params.get("call_keywords", {}).items():
            self.call_keywords.setdefault(name, set()).update(keywords)
        self.names.extend(re.compile(p, re.IGNORECASE) for p in params.get("names", ()))
        self.device_tests.extend(re.compile(p, re.IGNORECASE) for p in params.get("device_tests", ()))
        self.accelerator_names.extend(re.compile(p) for p in params.get("accelerator_names", ()))
        self.predicates.update(params.get("predicates", {}))
        self.predicate_names.extend(re.compile(p, re.IGNORECASE) for p in params.get("predicate_names", ()))
        self.identity_names.extend(re.compile(p, re.IGNORECASE) for p in params.get("identity_names", ()))
        self.cuda_only_strings.extend(re.compile(p) for p in params.get("cuda_only_strings", ()))
        for key in NAME_LISTS:
            getattr(self, key).update(params.get(key, ()))

    def device_named(self, code: str) -> bool:
        """Does this expression, as code, name a device (`device`, `args.device`, `cfg.MODEL.DEVICE`)?"""
        return any(p.fullmatch(code) for p in self.names)

    def accelerator_named(self, code: str) -> bool:
        """Does this expression hold a Lightning accelerator name (`accelerator`, `self._accelerator_flag`)?"""
        return any(p.fullmatch(code) for p in self.accelerator_names)


# builtins whose result is an element of their argument (or an iterator over it)
_ELEMENT_OF = frozenset({"next", "iter"})


def code_of(node: cst.CSTNode) -> str:
    """The node as source text (a Name without printing)."""
    if isinstance(node, cst.Name):  # the common case, without printing
        return node.value
    return cst.Module(body=[]).code_for_node(node)


def _string(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def literals(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The string literals a value can evaluate to: itself, ternary branches, `or`, sequences."""
    if isinstance(node, (cst.IfExp, cst.BooleanOperation)):
        for choice in choices(node):
            yield from literals(choice)
    elif isinstance(node, (cst.SimpleString, cst.FormattedString)):
        yield node
    elif isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        for element in node.elements:
            yield from literals(element.value)
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        yield from literals(node.left)  # "cuda:" + str(rank)
        yield from literals(node.right)  # ["cpu"] + ["cuda"]
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        yield from literals(node.left)  # "cuda:%d" % rank
        if (_string(node.left) or "").startswith("%s"):  # "%s:%d" % ("cuda", rank)
            right = node.right
            yield from literals(right.elements[0].value if isinstance(right, cst.Tuple) else right)
    elif (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
    ):
        yield from literals(node.func.value)  # "cuda:{}".format(rank)
        template = _string(node.func.value) or ""
        if template.startswith(("{}", "{0}")) and node.args and node.args[0].keyword is None:
            yield from literals(node.args[0].value)  # "{}:{}".format("cuda", rank)
    elif (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "join"
        and _string(node.func.value) in ("", ":")
        and len(node.args) == 1
        and isinstance(node.args[0].value, (cst.List, cst.Tuple))
        and node.args[0].value.elements
    ):
        yield from literals(node.args[0].value.elements[0].value)  # ":".join(["cuda", str(rank)])
    elif isinstance(node, cst.Call) and short_name(node.func) in ("field", "Field"):
        for arg in node.args:  # dataclasses.field(default="cuda"), pydantic Field("cuda")
            if arg.keyword is None or arg.keyword.value == "default":
                yield from literals(arg.value)
                break


def literal_type(node: cst.CSTNode) -> bool:
    """`Literal[...]`, `typing.Literal[...]`: a type whose members are values, not keys looked up."""
    return isinstance(node, cst.Subscript) and short_name(node.value) == "Literal"


def literal_members(annotation: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The members of every Literal in a type: `Optional[Literal["cuda", "cpu"]]`, `Literal["cuda"] | None`."""
    found: list[cst.BaseExpression] = []
    stack: list[cst.BaseExpression] = [annotation]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Subscript):
            values = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
            (found if literal_type(node) else stack).extend(values)
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
            stack.extend((node.left, node.right))
    return found


class DeviceContext:
    """Marks the literals of one module as devices or text, each with its evidence."""

    def __init__(
        self,
        spec: DeviceSpec,
        qualify: Callable[[cst.CSTNode], str | None],
        project: FirstParty | None = None,
    ) -> None:
        self.spec = spec
        self.qualify = qualify
        # the project's own functions in other modules, and the parameters they hand to a device API
        self.project = (
            None
            if project is None or not project.layout.facts
            else ProjectCalls(project, qualify, self.slot_takes_device, spec.message_calls)
        )
        self.devices: dict[int, str] = {}  # id(literal) -> evidence
        self.text: dict[int, str] = {}
        self.flow = DeviceFlow()  # variables and attributes that hold or reach a device
        self.prefixes: set[int] = set()  # "cuda:" + str(rank): the left operand of a concatenation
        self.tables: set[str] = set()  # dicts the file looks up by a device type: their keys are devices
        self.arguments: dict[str, str] = {}  # value -> a command-line argument carrying it: "--device=cuda:0"
        self.echoes: dict[int, str] = {}  # id(literal) -> the argument it is compared as parsed back
        # id(function) -> its parameters that pick among labels, with their words (module_labels)
        self.labels: dict[int, Labels] = {}

    # ---- the module-wide pass: which variables flow into device-taking APIs ----------------------
    def scan(self, module: cst.Module | NodeIndex) -> None:
        """Mark every literal of the module that its place shows to be a device or text."""
        nodes = module if isinstance(module, NodeIndex) else NodeIndex(module)
        calls = nodes.of(cst.Call)
        self.flow.scan_aliases(nodes, self._takes_device)
        self.flow.scan_params(nodes)
        if self.project is not None:  # before the flow binds: what importers show its values to be
            self.project.scan(nodes, self)
        for call in calls:  # first every variable that reaches a device API, wherever it is used
            for arg, _ in self.device_slots(call):
                self.flow.reach(arg.value, self.qualify)
        for function in nodes.of(cst.FunctionDef):  # def device_name(self): return self._name
            if self.spec.device_named(function.name.value):
                for statement in returns(function):
                    if statement.value is not None:
                        self.flow.reach(statement.value, self.qualify)
        self.flow.bind(nodes, self.device_typed)  # dst = torch.device(s); src = t.device
        self.flow.trace_fields(nodes, self.qualify)  # dev = args.accel; model.to(dev)
        for call in calls:  # then the tables looked up by a device: BACKENDS.get(device.type)
            func = call.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "get"
                and isinstance(func.value, cst.Name)
                and call.args
                and self.device_typed(call.args[0].value)
            ):
                self.tables.add(func.value.value)
        for subscript in nodes.of(cst.Subscript):
            index = subscript.slice[0].slice if len(subscript.slice) == 1 else None
            table = subscript.value
            if (
                isinstance(table, cst.Name)
                and isinstance(index, cst.Index)
                and self.device_typed(index.value)
            ):
                self.tables.add(table.value)
        for string in nodes.of(cst.SimpleString):  # parse(["--device=cuda:0"]): the argument stays
            argument = _ARGUMENT.fullmatch(_string(string) or "")
            if argument is not None:
                self.arguments.setdefault(argument.group(1), str(string.evaluated_value))
        # parameters that pick among labels (`impl="cuda"` beside "ref"), per function
        self.labels = module_labels(nodes.of(cst.FunctionDef), self)
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
            (cst.Subscript, marker.visit_Subscript),
            (cst.Match, marker.visit_Match),
            (cst.ClassDef, marker.visit_ClassDef),
            (cst.IfExp, marker.visit_IfExp),
            (cst.List, marker.visit_sequence),
            (cst.Tuple, marker.visit_sequence),
            (cst.Set, marker.visit_sequence),
            (cst.FunctionDef, marker.visit_FunctionDef),
            (cst.For, marker.visit_For),
            (cst.FormattedString, marker.visit_FormattedString),
            (cst.CompFor, marker.visit_For),
        )
        for cls, mark in handlers:
            for node in nodes.of(cls):
                mark(node)

    def device_slots(self, call: cst.Call) -> Iterator[tuple[cst.Arg, str]]:
        """The arguments of `call` that take a device, each with the API that takes it."""
        func: cst.BaseExpression = call.func
        args: Iterable[cst.Arg] = call.args
        qualified = self.qualify(func)
        if qualified == "functools.partial" and call.args and call.args[0].keyword is None:
            func, args = call.args[0].value, call.args[1:]  # partial(torch.autocast, "cuda")
            qualified = self.qualify(func)
        if qualified is None:  # scope = torch.autocast; scope("cuda")
            qualified = self.flow.alias(func, self._takes_device)
        short = short_name(func)
        name = qualified or short
        positions = self.spec.calls.get(qualified or "", set()) | self.spec.calls.get(short, set())
        own = self.spec.call_keywords.get(qualified or "", set())
        index = 0
        for arg in args:
            if arg.keyword is not None:
                if arg.keyword.value in self.spec.keywords:
                    yield arg, f"{arg.keyword.value}= takes a device"
                elif arg.keyword.value in own:
                    yield arg, f"{name}({arg.keyword.value}=) takes a device"
                continue
            if arg.star:
                break
            if index in positions:
                yield arg, f"argument {index + 1} of {name} takes a device"
            index += 1

    def slot_takes_device(self, callee: str, slot: int | str) -> str | None:
        """The API's name when `callee` (qualified, or a method's name) takes a device at position
        or keyword `slot` (engine/project/project_devices.py), else None."""
        if isinstance(slot, str):
            if slot in self.spec.keywords or slot in self.spec.call_keywords.get(callee, set()):
                return f"{callee}({slot}=)"
            return None
        short = callee.rpartition(".")[2]
        if slot in self.spec.calls.get(callee, set()) | self.spec.calls.get(short, set()):
            return callee
        return None

    def _takes_device(self, func: cst.BaseExpression) -> str | None:
        """The API's name when `func` names a callable that takes a device, else None."""
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return None
        qualified = self.qualify(func)
        if qualified is not None and qualified in self.spec.calls:
            return qualified
        return None

    def device_typed(self, node: cst.BaseExpression) -> bool:
        """`x.device`, `x.device.type`, `args.device`, `str(x.device)`, a variable fed to a device API."""
        if isinstance(node, cst.Call) and short_name(node.func) == "str" and len(node.args) == 1:
            return self.device_typed(node.args[0].value)
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("lower", "strip")
            and self.device_typed(node.func.value)
        ):
            return True  # str(device).lower()
        if isinstance(node, cst.Subscript):  # devices[0], state["device"]
            index = node.slice[0].slice if len(node.slice) == 1 else None
            key = _string(index.value) if isinstance(index, cst.Index) else None
            return self.device_typed(node.value) or (key is not None and self.spec.device_named(key))
        if isinstance(node, cst.Call) and short_name(node.func) in _ELEMENT_OF and len(node.args) == 1:
            return self.device_typed(node.args[0].value)  # next(iter(local_devices)).type
        if isinstance(node, cst.Call):  # get_accelerator().device_name(), torch.device(d)
            return self.spec.device_named(short_name(node.func)) or self.qualify(node.func) == "torch.device"
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return False
        if isinstance(node, cst.Attribute) and node.attr.value == "type" and self.device_typed(node.value):
            return True  # torch.device(d).type, parallel_devices[0].type
        if isinstance(node, cst.Attribute) and self.spec.device_named(node.attr.value):
            return True  # next(model.parameters()).device, batch[0].device: the attribute's name says
        if self.flow.typed(node):
            return True
        return self.spec.device_named(code_of(node))

    def mark(self, values: Iterable[cst.BaseExpression], into: dict[int, str], why: str) -> None:
        """Record `why` for every literal the values can evaluate to (the first evidence stays)."""
        for value in values:
            for literal in literals(value):
                into.setdefault(id(literal), why)

    def matches(self, node: cst.BaseExpression, value: str, pattern: re.Pattern[str], old: str) -> bool:
        """Does the rule's pattern take this literal (a concatenation's `old + ":"` prefix too)?"""
        return bool(pattern.fullmatch(value)) or (id(node) in self.prefixes and value == old + ":")

    def verdict(self, node: cst.BaseExpression, value: str, old: str) -> tuple[DeviceAnswer, str]:
        """Device, text or unknown, with the evidence."""
        key = id(node)
        if key in self.echoes:
            return DeviceAnswer.TEXT, self.echoes[key]
        device = self.devices.get(key)
        if device is not None and not (device.endswith(CONVENTION) and key in self.text):
            return DeviceAnswer.DEVICE, device
        if key in self.text:
            return DeviceAnswer.TEXT, self.text[key]
        if id(node) in self.prefixes:
            return DeviceAnswer.DEVICE, "the prefix of a device joined with its index"
        if value != old:  # "cuda:0", "cuda:%d"
            return DeviceAnswer.DEVICE, "a device with its index"
        return DeviceAnswer.UNKNOWN, "no device API, comparison or device-named variable takes it"


class _Marker:
    """Marks device literals and text literals by where they stand (each kind of node in any order)."""

    def __init__(self, context: DeviceContext) -> None:
        self.c = context

    def visit_Call(self, node: cst.Call) -> None:
        c = self.c
        for arg, why in c.device_slots(node):
            c.mark([arg.value], c.devices, why)
            if isinstance(arg.value, cst.Dict):  # device_map={"": "cuda:0"}
                c.mark(
                    (e.value for e in arg.value.elements if isinstance(e, cst.DictElement)), c.devices, why
                )
        short = short_name(node.func)
        name = self.c.qualify(node.func) or short
        joined = isinstance(node.func, cst.Attribute) and _string(node.func.value) in ("", ":")
        if (name in c.spec.text_calls or short in c.spec.text_calls) and not joined:  # not ":".join
            c.mark((a.value for a in node.args), c.text, PATH_PIECE + name)
        for a in node.args:
            if a.keyword and a.keyword.value in c.spec.text_keywords:
                c.mark([a.value], c.text, f"{a.keyword.value}= names an option's attribute")
        positional = [a.value for a in node.args if a.keyword is None]
        if short == "add_argument":
            options = [o for o in positional if isinstance(o, cst.SimpleString)]
            named = any(
                c.spec.device_named(str(o.evaluated_value).lstrip("-").replace("-", "_")) for o in options
            )
            # add_argument("--accel", default="cuda") where args.accel reaches a device API
            reaching = next((f for f in option_fields(node) if f in c.flow.fields), None)
            if named or reaching is not None:
                chosen = (
                    a.value for a in node.args if a.keyword and a.keyword.value in c.spec.option_keywords
                )
                why = (
                    "a value of a --device option"
                    if named
                    else f"a value of the option behind .{reaching}, a device"
                )
                c.mark(chosen, c.devices, why)
        elif short in ("startswith", "endswith", "replace", "removeprefix", "split") and isinstance(
            node.func, cst.Attribute
        ):
            if c.device_typed(node.func.value):  # args.device.startswith("cuda"), device.startswith("cuda:")
                c.mark(positional[:1], c.devices, f"tested against {code_of(node.func.value)}")
                piece = _string(positional[0]) if positional else None
                if piece is not None and piece.endswith(":"):
                    c.prefixes.add(id(positional[0]))
        elif short in ("assertEqual", "assertNotEqual", "assertIn", "assertNotIn"):
            typed = next((p for p in positional if c.device_typed(p)), None)
            if typed is not None:  # self.assertEqual(p.device.type, "cuda")
                c.mark(positional, c.devices, f"compared with {code_of(typed)}")
        elif (
            short == "parametrize"
            and len(positional) > 1
            and c.spec.accelerator_named((_string(positional[0]) or "").strip())
        ):  # parametrize("accelerator", ["cpu", "cuda", "mps"]): Lightning's names
            c.mark(
                positional[1:2], c.text, f"{ACCELERATOR}(a value of the parameter {_string(positional[0])!r})"
            )
        elif short == "parametrize" and len(positional) > 1:
            names = _string(positional[0]) or ""
            if any(c.spec.device_named(n.strip()) for n in names.split(",")) and "," not in names:
                values = positional[1]
                params = values.elements if isinstance(values, (cst.List, cst.Tuple)) else []
                c.mark(positional[1:2], c.devices, f"a value of the parameter {names!r}")
                for element in params:  # pytest.param("cuda", marks=...)
                    if isinstance(element.value, cst.Call) and element.value.args:
                        c.mark(
                            [element.value.args[0].value], c.devices, f"a value of the parameter {names!r}"
                        )
        elif short == "setattr" and len(positional) > 2:  # setattr(ns, "device", "cuda")
            attribute = _string(positional[1])
            if attribute is not None and c.spec.device_named(attribute):
                c.mark(positional[2:3], c.devices, f"set as the attribute {attribute!r}")
        if short in c.flow.enums and isinstance(node.func, cst.Name) and not c.spec.device_named(short):
            # TimerType("cuda"): a member looked up by its value, a label as the member is
            c.mark((a.value for a in node.args[:1]), c.text, f"a value of the enum {short}")
        self._own_function(node, short)
        self._project_function(node)

    def _project_function(self, node: cst.Call) -> None:
        """`move(x, "cuda")`, `r.run(device="cuda")` where the project's function or method in
        another module hands that parameter to a device API (engine/devices/project_calls.py)."""
        c = self.c
        if c.project is not None:
            c.project.mark_call(node, c, c.spec.device_named, lambda callee: callee in c.spec.calls)

    def _own_function(self, node: cst.Call, short: str) -> None:
        """`_capture("cuda")` where the module defines `def _capture(target_device)`."""
        c = self.c
        params = c.flow.params.get(short)
        own = isinstance(node.func, cst.Name) or own_attribute(node.func) is not None
        if not params or not own or short in c.spec.calls:
            return
        for index, arg in enumerate(node.args):
            if arg.keyword is not None or arg.star or index >= len(params):
                break
            param = params[index]
            if c.spec.device_named(param) or param in c.flow.names:
                c.mark([arg.value], c.devices, f"given to {short}() as its parameter {param}")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        left = node.left
        if isinstance(node.operator, cst.Add) and isinstance(left, cst.SimpleString):
            value = left.evaluated_value
            if isinstance(value, str) and value.endswith(":"):
                self.c.prefixes.add(id(left))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        parts = [node.left, *(t.comparator for t in node.comparisons)]
        typed = next((p for p in parts if self.c.device_typed(p)), None)
        if typed is not None:
            self.c.mark(parts, self.c.devices, f"compared with {code_of(typed)}")
            for part in parts:  # the test parses "--device=cuda:0" and compares what it got back
                argument = self.c.arguments.get(_string(part) or "")
                if argument is not None:
                    self.c.echoes[id(part)] = f"{ECHO}{argument!r} gives, compared as parsed back"
        accelerator = next((p for p in parts if self._accelerator(p)), None)
        if accelerator is not None:
            self.c.mark(parts, self.c.text, f"{ACCELERATOR}(compared with {code_of(accelerator)})")

    def _accelerator(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, (cst.Name, cst.Attribute)) and self.c.spec.accelerator_named(code_of(node))

    def _bind(self, targets: Iterable[cst.BaseExpression], value: cst.BaseExpression | None) -> None:
        if value is None:
            return
        for target in targets:
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
                if len(target.elements) == len(value.elements):  # device, backend = "cuda", "nccl"
                    for t, v in zip(target.elements, value.elements):
                        self._bind([t.value], v.value)
            elif isinstance(target, cst.Name) and target.value in self.c.spec.text_targets:
                self.c.mark([value], self.c.text, f"an entry of {target.value}")
            elif self._accelerator(target):
                self.c.mark([value], self.c.text, f"{ACCELERATOR}(bound to {code_of(target)})")
            elif (
                isinstance(target, cst.Name) and target.value in self.c.tables and isinstance(value, cst.Dict)
            ):
                keys = [e.key for e in value.elements if isinstance(e, cst.DictElement)]
                self.c.mark(keys, self.c.devices, f"a key of {target.value}, looked up by a device")
            elif self.c.device_typed(target):
                self.c.mark([value], self.c.devices, f"bound to {code_of(target)}")

    def visit_Assign(self, node: cst.Assign) -> None:
        self._bind((t.target for t in node.targets), node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind([node.target], node.value)
        self._typed(node.target, node.annotation)

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is not None:
            self._bind([node.name], node.default)
        self._typed(node.name, node.annotation)

    def _typed(self, target: cst.BaseExpression, annotation: cst.Annotation | None) -> None:
        """`device: Literal["cuda", "cpu"] = "cuda"`: the type's members follow the value they admit."""
        if annotation is not None and self.c.device_typed(target):
            members = literal_members(annotation.annotation)
            self.c.mark(members, self.c.devices, f"a member of the Literal type of {code_of(target)}")

    def visit_DictElement(self, node: cst.DictElement) -> None:
        key = _string(node.key)
        if key is not None and self.c.spec.device_named(key):
            self.c.mark([node.value], self.c.devices, f"the value of the key {key!r}")
        elif key is not None and self.c.spec.accelerator_named(key):
            self.c.mark([node.value], self.c.text, f"{ACCELERATOR}(the value of the key {key!r})")

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and self.c.spec.device_named(node.keyword.value):
            self.c.mark([node.value], self.c.devices, f"given as {node.keyword.value}=")
        elif node.keyword is not None and self.c.spec.accelerator_named(node.keyword.value):
            self.c.mark([node.value], self.c.text, f"{ACCELERATOR}(given as {node.keyword.value}=)")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # def infer_device(): ... return "cuda"
        if self.c.spec.device_named(node.name.value):
            for statement in returns(node):
                if statement.value is not None:
                    self.c.mark([statement.value], self.c.devices, f"returned by {node.name.value}()")
        for name, words in self.c.labels.get(id(node), {}).items():
            why = f"a label: {name} picks among {', '.join(sorted({w for w, _ in words}))}"
            self.c.mark([literal for _, literal in words], self.c.text, why)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if literal_type(node):  # Literal["cpu", "cuda"]: members, as a list's elements are
            self._siblings(literal_members(node), "a member of a Literal type with {other}")
            return
        if isinstance(node.value, cst.Name) and node.value.value in self.c.tables and len(node.slice) == 1:
            index = node.slice[0].slice  # DEVICE_CONFIG["cuda"] of a table looked up by a device
            if isinstance(index, cst.Index):
                self.c.mark(
                    [index.value], self.c.devices, f"a key of {node.value.value}, looked up by a device"
                )
        # {"cuda": "nccl", "cpu": "gloo"}[device.type]: the keys are device types
        if isinstance(node.value, cst.Dict) and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and self.c.device_typed(index.value):
                keys = [e.key for e in node.value.elements if isinstance(e, cst.DictElement)]
                self.c.mark(keys, self.c.devices, f"a key looked up by {code_of(index.value)}")

    def visit_Match(self, node: cst.Match) -> None:
        if not self.c.device_typed(node.subject):
            return
        for case in node.cases:
            pattern = case.pattern
            options = pattern.patterns if isinstance(pattern, cst.MatchOr) else [pattern]
            for option in options:
                if isinstance(option, cst.MatchValue):
                    self.c.mark([option.value], self.c.devices, f"a case of match {code_of(node.subject)}")

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        # f"{'cuda' if is_cuda else 'cpu'}_time_total": the pieces make a name, not a device
        text = "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
        if _DEVICE_TAIL.fullmatch(text):
            return
        template = "".join(p.value if isinstance(p, cst.FormattedStringText) else "{}" for p in node.parts)
        pieces = [p.expression for p in node.parts if isinstance(p, cst.FormattedStringExpression)]
        self.c.mark(pieces, self.c.text, f"{NAME_PIECE}f{template!r}")

    def visit_For(self, node: cst.For | cst.CompFor) -> None:
        # for dev in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []): torch.device(dev)
        if self.c.device_typed(node.target):
            self.c.mark([node.iter], self.c.devices, f"iterated as {code_of(node.target)}")

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        # class T: device_map_for_quantization = "cuda" (later device_map=self.device_map_for_quantization)
        for statement in node.body.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and any(
                        isinstance(t.target, cst.Name) and t.target.value in self.c.flow.attributes
                        for t in small.targets
                    ):
                        self.c.mark([small.value], self.c.devices, "a class attribute that holds a device")
                    elif (  # @dataclass: accel: str = "cuda", later torch.device(self.accel)
                        isinstance(small, cst.AnnAssign)
                        and small.value is not None
                        and isinstance(small.target, cst.Name)
                        and small.target.value in self.c.flow.attributes
                    ):
                        self.c.mark([small.value], self.c.devices, "a field of the class that holds a device")
        # class Device(Enum): CUDA = "cuda"; class TimerType(Enum): CUDA = "cuda" is a label: members
        # of one enum are compared with each other, and keep working whatever their values say
        if not self.c.spec.device_named(node.name.value):
            if node.name.value in self.c.flow.enums:
                for statement in node.body.body:
                    if isinstance(statement, cst.SimpleStatementLine):
                        for small in statement.body:
                            if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
                                self.c.mark(
                                    [small.value], self.c.text, f"a member of the enum {node.name.value}"
                                )
            return
        for statement in node.body.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
                        self.c.mark([small.value], self.c.devices, f"a member of class {node.name.value}")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        # "cuda" if torch.cuda.is_available() else "cpu": a CUDA test picks it
        test = code_of(node.test)
        if any(p.search(test) for p in self.c.spec.device_tests):
            self.c.mark([node.body, node.orelse], self.c.devices, "picked by a CUDA test" + CONVENTION)
        self._siblings([node.body, node.orelse], "beside {other} in a choice")

    def visit_sequence(self, node: cst.List | cst.Tuple | cst.Set) -> None:
        self._siblings([e.value for e in node.elements], "listed with {other}")

    def _siblings(self, values: list[cst.BaseExpression], why: str) -> None:
        """A literal beside a device type ("cpu", "mps") is a device type too, by convention."""
        found = [v for v in values if isinstance(v, cst.SimpleString)]
        lightning = next((_string(v) for v in found if _string(v) in self.c.spec.accelerator_types), None)
        if lightning is not None:  # {"cpu", "gpu", "cuda", "auto"}: accelerator names, not torch devices
            self.c.mark(found, self.c.text, f"{ACCELERATOR}(listed with {lightning!r})")
            return
        other = next((_string(v) for v in found if _string(v) in self.c.spec.device_types), None)
        if other is not None:
            self.c.mark(found, self.c.devices, why.format(other=repr(other)) + CONVENTION)


Labels = dict[str, list[tuple[str, cst.SimpleString]]]  # parameter -> (word, literal) it picks among


def _label_candidates(function: cst.FunctionDef, context: DeviceContext) -> dict[str, cst.SimpleString]:
    """The parameters with a string default that neither their name nor their type says are devices."""
    return {
        p.name.value: p.default
        for p in (*function.params.params, *function.params.kwonly_params)
        if isinstance(p.default, cst.SimpleString)
        and not context.spec.device_named(p.name.value)
        and not context.device_typed(p.name)
    }


def label_choices(
    function: cst.FunctionDef, candidates: dict[str, cst.SimpleString], context: DeviceContext
) -> Labels:
    """`def bias_act(x, impl="cuda")` with `assert impl in ["ref", "cuda"]` or `impl == "ref"`: a
    candidate parameter compared only with strings, one of which is no device type, selects among
    labels (an implementation, a mode), not devices. Its default and the strings compared with
    it, per parameter name."""
    words: Labels = {}
    for comparison in m.findall(function.body, m.Comparison()):
        assert isinstance(comparison, cst.Comparison)
        parts = [comparison.left, *(t.comparator for t in comparison.comparisons)]
        names = [p.value for p in parts if isinstance(p, cst.Name) and p.value in candidates]
        for name in names:
            for part in parts:
                elements = part.elements if isinstance(part, (cst.List, cst.Tuple, cst.Set)) else [part]
                for element in elements:
                    value = element.value if isinstance(element, cst.BaseElement) else element
                    if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
                        words.setdefault(name, []).append((value.evaluated_value, value))
    spec = context.spec
    devices = spec.device_types | spec.dispatch_devices | {"cuda", "cpu", "npu"}
    found = {}
    for name, compared in words.items():
        default = candidates[name]
        every = [*compared, (str(default.evaluated_value), default)]
        if any(word.split(":")[0] not in devices for word, _ in every):
            found[name] = every
    return found


def module_labels(functions: list[cst.FunctionDef], context: DeviceContext) -> dict[int, Labels]:
    """`label_choices` of each function (by id), and the parameters that only hand their value on
    to a label parameter of the same name of another function of the module (`filter2d(...,
    impl="cuda")` calling `upfirdn2d(..., impl=impl)`), until nothing new is found."""
    found: dict[int, Labels] = {}
    # (function's labels, parameter, its default, the module's function it is handed on to)
    hand_ons: list[tuple[Labels, str, cst.SimpleString, str]] = []
    names = {f.name.value for f in functions}
    for function in functions:
        candidates = _label_candidates(function, context)
        found[id(function)] = labels = label_choices(function, candidates, context) if candidates else {}
        if not candidates:
            continue
        for call in m.findall(function.body, m.Call()):
            assert isinstance(call, cst.Call)
            callee = short_name(call.func)
            for a in call.args if callee in names else ():
                name = a.keyword.value if a.keyword is not None else ""
                if name in candidates and isinstance(a.value, cst.Name) and a.value.value == name:
                    hand_ons.append((labels, name, candidates[name], callee))
    by_name = {f.name.value: found[id(f)] for f in functions}
    changed = True
    while changed:
        changed = False
        for labels, name, default, callee in hand_ons:
            if name not in labels and name in by_name[callee]:
                labels[name] = [(str(default.evaluated_value), default)]
                changed = True
    return found
