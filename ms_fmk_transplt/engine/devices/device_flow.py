"""Which names and attributes of a module hold devices, found before the literals are marked.

The device evidence (engine/devices/device_evidence.py) asks whether an expression is device-typed. Beyond names
that look like a device (`device`, `args.dev`), a module tells by how it uses them:
- a variable or `self.X` / `cls.X` attribute handed to an API that takes a device
  (`torch.device(kind)`, `device_map=self.device_map_for_quantization`);
- a variable bound to a device-typed value (`dst = torch.device(s)`, `src = t.device`,
  `name = get_accelerator().device_name()`), so `dst.type == "cuda"` compares a device, and the
  variables a device loop runs over (`for d in (first, second): torch.ones(1, device=d)`);
- a variable or attribute returned by a function named like a device
  (`def device_name(self): return self._name`);
- a variable bound to an API that takes a device, called later (`scope = torch.autocast`,
  `scope = autocast if amp else nullcontext; with scope("cuda")`): the alias takes what the API takes;
- a parameter of a function the module defines (`def _capture(target_device)`): its callers'
  arguments in that place;
- a field of another object (`args.accel`, `cfg.target`) handed to such an API, directly or
  through a variable (`dev = args.accel; model.to(dev)`): the command-line option that fills it
  (`add_argument("--accel", default="cuda")`) holds a device, whatever its name.
Names are per module, not per scope: a variable that holds a device in one function is taken to
hold one wherever the module uses that name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from ms_fmk_transplt.engine.syntax import NodeIndex, children, short_name

_RECEIVERS = ("self", "cls")


def own_attribute(node: cst.BaseExpression) -> str | None:
    """`X` of `self.X` / `cls.X`, else None."""
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value in _RECEIVERS
    ):
        return node.attr.value
    return None


def alias_key(node: cst.BaseExpression) -> str | None:
    """How an alias is remembered: `scope` for a variable, `.scope` for `self.scope` / `cls.scope`."""
    if isinstance(node, cst.Name):
        return node.value
    attribute = own_attribute(node)
    return None if attribute is None else "." + attribute


def value_key(node: cst.BaseExpression) -> str | None:
    """How a bound value is remembered: `x` for a variable, `.x` for any attribute (`args.x`, `self.x`)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return "." + node.attr.value
    return None


def option_fields(call: cst.Call) -> list[str]:
    """The attribute an `add_argument(...)` call fills: its `dest=`, else its options' names
    (`"-a", "--accel"`: `a`, `accel`)."""
    dest = next((a.value for a in call.args if a.keyword and a.keyword.value == "dest"), None)
    options = [a.value for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
    names = [dest] if isinstance(dest, cst.SimpleString) else options
    fields = [
        str(n.evaluated_value).lstrip("-").replace("-", "_") for n in names if isinstance(n, cst.SimpleString)
    ]
    return [f for f in fields if f.isidentifier()]


def _option_defaults(call: cst.Call) -> list[tuple[cst.BaseExpression, cst.BaseExpression | None]]:
    """`add_argument("--accelerator", default="gpu")`: (the parsed attribute, its default)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "add_argument"):
        return []
    default = next((a.value for a in call.args if a.keyword and a.keyword.value == "default"), None)
    return [(cst.Attribute(cst.Name("args"), cst.Name(f)), default) for f in option_fields(call)]


def choices(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The values an expression picks from: both branches of a ternary, the operands of `or`."""
    if isinstance(node, cst.IfExp):
        yield from choices(node.body)
        yield from choices(node.orelse)
    elif isinstance(node, cst.BooleanOperation):
        yield from choices(node.left)
        yield from choices(node.right)
    else:
        yield node


def _is_flag(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("True", "False")


def returns(function: cst.FunctionDef) -> Iterator[cst.Return]:
    """The return statements of a function, not of the functions and classes nested in it."""
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Return):
            yield current
        elif not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(children(current))


def is_enum_base(base: cst.BaseExpression) -> bool:
    """`Enum`, `enum.StrEnum`, `IntEnum`, `Flag`: a base that makes a class an enum."""
    name = short_name(base)
    return name.endswith("Enum") or name in ("Flag", "IntFlag")


def _positional(function: cst.FunctionDef) -> list[str]:
    """A function's positional parameters as a call passes them (a method's receiver left out)."""
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    return params[1:] if params and params[0] in _RECEIVERS else params


class DeviceFlow:
    """The module's device-holding names, attributes, callable aliases and function parameters."""

    def __init__(self) -> None:
        self.names: set[str] = set()  # variables that hold or reach a device
        self.attributes: set[str] = set()  # X of self.X / cls.X that holds or reaches a device
        self.fields: set[str] = set()  # X of args.X, cfg.X (not a module's) that reaches a device
        self.aliases: dict[str, str] = {}  # variable -> the device-taking API it is bound to
        self.params: dict[str, list[str]] = {}  # function the module defines -> positional params
        self.strings: dict[str, list[cst.SimpleString]] = {}  # variable -> the literals bound to it
        self.flags: dict[str, set[bool]] = {}  # variable -> the True / False bound to it
        self.enums: set[str] = set()  # the enum classes the module defines (`class Kind(Enum)`)

    def scan_aliases(
        self, nodes: NodeIndex, takes_device: Callable[[cst.BaseExpression], str | None]
    ) -> None:
        """`scope = torch.autocast`, `self.scope = ...` (or a ternary / `or` of callables, one of
        them device-taking)."""
        for assign in nodes.of(cst.Assign):
            targets = [key for key in (alias_key(t.target) for t in assign.targets) if key]
            if not targets or isinstance(assign.value, cst.Call):
                continue
            api = next((a for a in map(takes_device, choices(assign.value)) if a), None)
            if api is not None:
                for target in targets:
                    self.aliases[target] = api

    def alias(
        self, func: cst.BaseExpression, takes_device: Callable[[cst.BaseExpression], str | None]
    ) -> str | None:
        """The device-taking API a called expression stands for: `scope(...)`, `self.scope(...)`,
        `(autocast if amp else nullcontext)(...)`."""
        key = alias_key(func)
        if key is not None:
            return self.aliases.get(key)
        if isinstance(func, (cst.IfExp, cst.BooleanOperation)):
            return next((a for a in map(takes_device, choices(func)) if a), None)
        return None

    def scan_params(self, nodes: NodeIndex) -> None:
        """The positional parameters of every function (a class: its `__init__`) the module defines, by its name; and the
        string literals every variable and parameter is bound to (`accelerator = "gpu"`)."""
        for function in nodes.of(cst.FunctionDef):
            self.params.setdefault(function.name.value, _positional(function))
        for cls in nodes.of(cst.ClassDef):  # `Runner("cuda")` is `Runner.__init__(self, device)`
            init = next(
                (f for f in cls.body.body if isinstance(f, cst.FunctionDef) and f.name.value == "__init__"),
                None,
            )
            if init is not None:
                self.params.setdefault(cls.name.value, _positional(init))
            if any(is_enum_base(base.value) for base in cls.bases):
                self.enums.add(cls.name.value)
        # an enum whose members' values the module reads (`Kind.CUDA.value`) may hand them to a
        # device API: its values are no labels (read only in a module that defines an enum)
        for attribute in nodes.of(cst.Attribute) if self.enums else ():
            owner = attribute.value
            if (
                attribute.attr.value == "value"
                and isinstance(owner, cst.Attribute)
                and isinstance(owner.value, cst.Name)
            ):
                self.enums.discard(owner.value.value)
        bound: list[tuple[cst.BaseExpression, cst.BaseExpression | None]] = [
            (t.target, a.value) for a in nodes.of(cst.Assign) for t in a.targets
        ]
        bound += [(a.target, a.value) for a in nodes.of(cst.AnnAssign)]
        bound += [(p.name, p.default) for p in nodes.of(cst.Param)]
        for call in nodes.of(cst.Call):  # add_argument("--accelerator", default="gpu"): args.accelerator
            bound += _option_defaults(call)
        for target, value in bound:
            key = value_key(target)
            if key is not None and value is not None:
                found = [c for c in choices(value) if isinstance(c, cst.SimpleString)]
                self.strings.setdefault(key, []).extend(found)
                flags = {c.value == "True" for c in choices(value) if isinstance(c, cst.Name) and _is_flag(c)}
                if flags:
                    self.flags.setdefault(key, set()).update(flags)

    def held(self, node: cst.BaseExpression) -> list[cst.SimpleString]:
        """The literals the module binds to a variable or attribute (`accelerator`, `args.accelerator`)."""
        key = value_key(node)
        return [] if key is None else self.strings.get(key, [])

    def held_flags(self, node: cst.BaseExpression) -> set[bool]:
        """The booleans the module binds to a variable or attribute (`tf32 = True`, `args.tf32`)."""
        key = value_key(node)
        return set() if key is None else self.flags.get(key, set())

    def reach(self, value: cst.BaseExpression, qualify: Callable[[cst.CSTNode], str | None]) -> None:
        """`value` is handed to a device-taking API: a variable, own attribute or field in it holds
        a device (`qualify` tells a module's attribute, `torch.float16`, from an object's field)."""
        for choice in choices(value):
            if isinstance(choice, cst.Name):
                self.names.add(choice.value)
            attribute = own_attribute(choice)
            if attribute is not None:
                self.attributes.add(attribute)
            self._reach_field(choice, qualify)

    def _reach_field(self, node: cst.BaseExpression, qualify: Callable[[cst.CSTNode], str | None]) -> None:
        """`args.accel`, `cfg.target`: a field of another object than self or a module."""
        if isinstance(node, cst.Attribute) and own_attribute(node) is None and qualify(node) is None:
            self.fields.add(node.attr.value)

    def trace_fields(self, nodes: NodeIndex, qualify: Callable[[cst.CSTNode], str | None]) -> None:
        """`dev = args.accel` where `dev` reaches a device API: the field reaches it too; and
        `self.where = where` where `self.where` reaches one: so does the variable or parameter."""
        for assign in nodes.of(cst.Assign):
            for target in assign.targets:
                attribute = own_attribute(target.target)
                if attribute in self.attributes:
                    self.names.update(c.value for c in choices(assign.value) if isinstance(c, cst.Name))
                for name, value in _pairs(target.target, assign.value):
                    if name not in self.names:
                        continue
                    for choice in choices(value):
                        self._reach_field(choice, qualify)

    def bind(self, nodes: NodeIndex, typed: Callable[[cst.BaseExpression], bool]) -> None:
        """Variables bound to a device-typed value, until nothing new is bound."""
        assigns = [
            pair for a in nodes.of(cst.Assign) for t in a.targets for pair in _pairs(t.target, a.value)
        ]
        loops = [
            loop
            for loop in nodes.of_any(cst.For, cst.CompFor)
            if isinstance(loop.iter, (cst.Tuple, cst.List))
        ]
        while True:
            before = len(self.names)
            for name, value in assigns:
                if name not in self.names and not _literal(value) and typed(value):
                    self.names.add(name)
            for loop in loops:  # for d in (device, other): torch.ones(1, device=d)
                if typed(loop.target):
                    self.names.update(
                        e.value.value for e in loop.iter.elements if isinstance(e.value, cst.Name)
                    )
            if len(self.names) == before:
                return

    def typed(self, node: cst.BaseExpression) -> bool:
        """A variable, own attribute or field the module shows to hold a device."""
        if isinstance(node, cst.Name):
            return node.value in self.names
        attribute = own_attribute(node)
        if attribute is not None:
            return attribute in self.attributes
        return isinstance(node, cst.Attribute) and node.attr.value in self.fields


def _pairs(target: cst.BaseExpression, value: cst.BaseExpression) -> Iterator[tuple[str, cst.BaseExpression]]:
    """(variable, value) of an assignment, tuples unpacked: `src, dst = t.device, torch.device(s)`."""
    if isinstance(target, cst.Name):
        yield target.value, value
    elif (
        isinstance(target, (cst.Tuple, cst.List))
        and isinstance(value, (cst.Tuple, cst.List))
        and len(target.elements) == len(value.elements)
    ):
        for t, v in zip(target.elements, value.elements):
            yield from _pairs(t.value, v.value)


def _literal(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))
