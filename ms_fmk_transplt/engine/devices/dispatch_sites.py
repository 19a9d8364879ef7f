"""Code written for several devices: which alternatives of a per-device dispatch stay as written.

A *dispatch* picks one alternative per device. Before the rewrite, from the read-only walk
(engine/syntax/node_index.py), this pass finds the dispatches of one module and what each alternative selects:
- an if/elif/else chain, a run of `if` statements that follow one another, a chain of conditional
  expressions: each test selects the devices it names, by an availability predicate
  (`torch.cuda.is_available()`, `is_torch_npu_available()`, `hasattr(torch, "npu")`, a name the
  rule data spells like one such as `is_npu` or `use_cuda`, a function of the module returning
  one, a variable or attribute bound to one), `torch.version.cuda` / `.hip`, a comparison with
  device-type literals (`dev.type == "npu"`, `device in ("cuda", "xpu")`, `.startswith("npu")`)
  or an enum member naming a device type (`DeviceType.NPU`);
- a `match`: each case selects the devices its patterns name;
- a dict literal: each entry is the alternative its key names (`{"cuda": ..., "npu": ...}`);
- a class body: its members naming device types (`CUDA = "cuda"`, `NPU = "npu"`);
- a list, tuple or set of device-type literals: each item.
Where one alternative selects the NPU, every other one that selects a device (and the `else`)
is *kept*: the transformer does not enter it, so it stays byte-identical, and one note per
dispatch names the NPU alternative's line. Where none does, nothing is kept: the CUDA branch
converts as before.
A vendor identity (`is_nvidia = platform == "cuda"`: the rule data's `identity_names`) is no
device: its value is kept, a branch it or `torch.version.hip` guards is kept (it never runs on
the NPU), and each NVIDIA- or AMD-only read there (`get_device_capability()`, `gcnArchName`)
is reported. A list that enumerates supported types (`choices=`, a `parametrize` or `runs_on`
argument) keeps its `"cuda"` and gets `"npu"` beside it (`widen`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.devices.device_evidence import DeviceSpec, code_of
from ms_fmk_transplt.engine.devices.device_flow import returns
from ms_fmk_transplt.engine.syntax import NodeIndex, children, if_runs, short_name

_ALIASES = {"ascend": "npu", "rocm": "hip"}  # names of a device type in predicates and enums
_NPU = "npu"
_VENDOR = frozenset({"hip", "nvidia"})  # selects a vendor's GPU: never the NPU, never converted
_TESTS = (cst.Equal, cst.NotEqual, cst.In, cst.NotIn, cst.Is, cst.IsNot)
_SEQUENCES = (cst.List, cst.Tuple, cst.Set)
Devices = frozenset[str]
_NONE: Devices = frozenset()


@dataclass(frozen=True)
class Kept:
    """A node left as written, and why: the dispatch's NPU alternative, or a vendor identity."""

    place: int  # one note per place
    npu: cst.CSTNode | None  # the NPU alternative; None: kept as a vendor (NVIDIA / AMD) only branch
    what: str  # "branch", "entry", "item", "member", "case"


@dataclass(frozen=True)
class Branch:
    """One alternative of a dispatch: the nodes it keeps (test and body) and what it selects."""

    nodes: tuple[cst.CSTNode, ...]
    devices: Devices
    fallback: bool = False  # an `else`: whatever the tests before it did not select
    subjects: frozenset[str] = frozenset()  # what its test compares (none: an availability predicate)


class DeviceDispatch:
    """The dispatches of one module and the alternatives they keep; built before the transform."""

    def __init__(self, spec: DeviceSpec, qualify: Callable[[cst.CSTNode], str | None]) -> None:
        self.spec = spec
        self.qualify = qualify
        self.kept: dict[int, Kept] = {}  # id(original node) -> why it stays as written
        self.widened: dict[int, int] = {}  # id(enumerating list) -> index of its "cuda" item
        self.vendor_reads: list[cst.CSTNode] = []  # NVIDIA / AMD only reads in kept vendor branches
        self._bound: dict[str, Devices] = {}  # own function, variable or attribute -> devices it tests
        self._sources: dict[str, list[cst.BaseExpression]] = {}  # ... -> the values it tests them by

    # ---- what a test selects -----------------------------------------------------------------
    def devices(self, test: cst.BaseExpression) -> Devices:
        """The device types a test selects (empty: it names none)."""
        if isinstance(test, cst.BooleanOperation):
            return self.devices(test.left) | self.devices(test.right)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return _NONE  # `not is_npu()`: the else is the NPU's, told by the chain's other tests
        if isinstance(test, cst.Comparison):
            return self._compared(test)
        if isinstance(test, cst.Call):
            return self._called(test)
        if isinstance(test, (cst.Name, cst.Attribute)):
            return self._named(test)
        return _NONE

    def _called(self, call: cst.Call) -> Devices:
        name = short_name(call.func)
        if name == "hasattr" and len(call.args) == 2:  # hasattr(torch, "npu")
            return self._device_literals(call.args[1].value)
        if name in ("startswith", "endswith") and call.args:
            return self._device_literals(call.args[0].value)
        env = self.qualify(call.func) or code_of(call.func)
        if env in self.spec.env_calls and call.args:  # os.getenv("FORCE_NPU"): a variable naming a device
            words = (_string(call.args[0].value) or "").lower().split("_")
            return frozenset(_ALIASES.get(w, w) for w in words if w in self.spec.dispatch_devices)
        return self._named(call.func)

    def _named(self, node: cst.BaseExpression) -> Devices:
        code = code_of(node)
        if any(p.fullmatch(code) for p in self.spec.identity_names):
            return frozenset({"nvidia"})
        qualified = self.qualify(node)
        for key in (qualified, code, short_name(node)):
            if key and key in self.spec.predicates:
                return frozenset({self.spec.predicates[key]})
        if code in self._bound:
            return self._bound[code]
        short = short_name(node)
        if short in self._bound:
            return self._bound[short]  # self.is_npu() of a method the module defines
        for pattern in self.spec.predicate_names:
            match = pattern.fullmatch(code)
            if match:
                device = match.group("device").lower()
                return frozenset({_ALIASES.get(device, device)})
        return self._member(node)

    def _member(self, node: cst.BaseExpression) -> Devices:
        """`DeviceType.NPU`, `Platform.CUDA`: an enum member naming a device type."""
        if isinstance(node, cst.Attribute) and node.attr.value.isupper():
            device = node.attr.value.lower()
            device = _ALIASES.get(device, device)
            if device in self.spec.dispatch_devices:
                return frozenset({device})
        return _NONE

    def _compared(self, test: cst.Comparison) -> Devices:
        found: set[str] = set()
        left = test.left
        for target in test.comparisons:
            if isinstance(target.operator, _TESTS):
                for side in (left, target.comparator):
                    found |= self._device_literals(side) or self._member(side)
                    if isinstance(side, cst.Call):  # os.getenv("FORCE_NPU", "0") == "1"
                        found |= self._called(side)
            left = target.comparator
        return frozenset(found)

    def _device_literals(self, node: cst.BaseExpression) -> Devices:
        """The device types a literal or a sequence of literals names (`"npu:0"` names `npu`)."""
        found: set[str] = set()
        for literal in _items(node):
            value = _string(literal)
            if value is not None:
                device = value.partition(":")[0].lower()
                if device in self.spec.dispatch_devices:
                    found.add(_ALIASES.get(device, device))
            else:
                found |= self._member(literal)
        return frozenset(found)

    # ---- the module's own predicates ---------------------------------------------------------
    def _follow(self, nodes: NodeIndex) -> None:
        """Functions returning a device test, and names bound to one, are tests too (to a fixpoint)."""
        for _ in range(3):
            before = len(self._bound)
            for function in nodes.of(cst.FunctionDef):
                found = _NONE
                for returned in _returns(function):
                    found |= self.devices(returned)
                if found and function.name.value not in self._bound:
                    self._bound[function.name.value] = found
                    self._sources[function.name.value] = list(_returns(function))
            for assign in nodes.of(cst.Assign):
                found = self.devices(assign.value)
                for target in assign.targets:
                    name = code_of(target.target)
                    if (
                        found
                        and isinstance(target.target, (cst.Name, cst.Attribute))
                        and name not in self._bound
                    ):
                        self._bound[name] = found
                        self._sources.setdefault(name, []).append(assign.value)
            if len(self._bound) == before:
                return

    def _family(self, nodes: NodeIndex) -> None:
        """A module defining an NPU predicate beside others (`is_npu_available()`, `use_cuda()`) is
        a dispatch offered to the project: each other predicate keeps its test, which callers in
        other modules branch on beside the NPU one."""
        functions = {f.name.value: f for f in nodes.of(cst.FunctionDef) if f.name.value in self._bound}
        npu = next((f for name, f in functions.items() if self._bound[name] == {_NPU}), None)
        if npu is None:
            return
        for name, function in functions.items():
            # a predicate: every return tests a device or is a constant (not `is_bf16_available()`,
            # whose CUDA return is one branch of its own dispatch, beside `return not ignore_tpu`)
            predicate = all(self.devices(r) or _constant(r) for r in _returns(function))
            if _NPU not in self._bound[name] and predicate:
                for source in self._sources.get(name, ()):
                    self.kept.setdefault(id(source), Kept(id(npu), npu.name, "predicate"))

    # ---- the dispatches ----------------------------------------------------------------------
    def scan(self, nodes: NodeIndex) -> None:
        """Find the module's dispatches and keep the alternatives beside an NPU one."""
        self._follow(nodes)
        self._family(nodes)
        self._identities(nodes)
        for block in nodes.of_any(cst.Module, cst.IndentedBlock):
            for run in if_runs(block.body):
                self._by_subject([b for head in run for b in self._chain(head)])
        inner: set[int] = set()
        for choice in nodes.of(cst.IfExp):
            if id(choice) not in inner:
                branches = []
                link: cst.BaseExpression = choice
                while isinstance(link, cst.IfExp):
                    inner.add(id(link))
                    branches.append(
                        Branch(
                            (link.test, link.body),
                            self.devices(link.test),
                            False,
                            _subjects(link.test, self.devices),
                        )
                    )
                    link = link.orelse
                self._by_subject([*branches, Branch((link,), _NONE, fallback=True)])
        for match in nodes.of(cst.Match):
            self._place([self._case(case) for case in match.cases])
        for table in nodes.of(cst.Dict):
            self._place(
                [
                    Branch((e,), self._device_literals(e.key))
                    for e in table.elements
                    if isinstance(e, cst.DictElement)
                ],
                "entry",
            )
        for cls in nodes.of(cst.ClassDef):
            self._place([self._member_line(s) for s in cls.body.body], "member")
        for sequence in nodes.of_any(*_SEQUENCES):
            self._place(
                [Branch((e.value,), self._device_literals(e.value)) for e in sequence.elements], "item"
            )
        self._enumerations(nodes)

    def _chain(self, head: cst.If) -> Iterator[Branch]:
        """The branches of an if/elif chain; its `else` is an alternative only beside a device test."""
        link: cst.If | cst.Else | None = head
        selects = False
        while isinstance(link, cst.If):
            devices = self.devices(link.test) or _detected(link, self._device_literals)
            selects = selects or bool(devices)
            yield Branch((link.test, link.body), devices, False, _subjects(link.test, self.devices))
            link = link.orelse
        if isinstance(link, cst.Else) and selects:
            yield Branch((link.body,), _NONE, fallback=True)

    def _case(self, case: cst.MatchCase) -> Branch:
        options = case.pattern.patterns if isinstance(case.pattern, cst.MatchOr) else [case.pattern]
        found: Devices = _NONE
        for option in options:
            pattern = option.pattern if isinstance(option, cst.MatchOrElement) else option
            if isinstance(pattern, cst.MatchValue):
                found |= self._device_literals(pattern.value)
        wildcard = isinstance(case.pattern, cst.MatchAs) and case.pattern.pattern is None
        return Branch((case,), found, fallback=wildcard)

    def _member_line(self, statement: cst.BaseStatement | cst.BaseSmallStatement) -> Branch:
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            small = statement.body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                named = self._device_literals(small.value)
                if isinstance(target, cst.Name) and target.value.isupper():
                    device = _ALIASES.get(target.value.lower(), target.value.lower())
                    if device in self.spec.dispatch_devices:
                        named |= {device}
                return Branch((statement,), named)
        return Branch((), _NONE)

    def _by_subject(self, branches: list[Branch]) -> None:
        """Tests of a chain or a run of `if`s are one dispatch per subject they compare
        (`device.type`, `kind`); an availability predicate belongs to every one."""
        subjects = {s for b in branches for s in b.subjects}
        if not subjects:
            self._place(branches)
        for subject in sorted(subjects):
            self._place([b for b in branches if b.fallback or not b.subjects or subject in b.subjects])

    def _place(self, branches: list[Branch], what: str = "branch") -> None:
        """Keep every alternative but the NPU's where one alternative selects the NPU."""
        npu = next((b for b in branches if _NPU in b.devices), None)
        selecting = [b for b in branches if b.devices]
        if npu is None or len(selecting) + any(b.fallback for b in branches) < 2:
            return
        place = id(npu.nodes[0])
        for branch in branches:
            if branch is npu or _NPU in branch.devices or not (branch.devices or branch.fallback):
                continue
            for node in branch.nodes:
                self.kept.setdefault(id(node), Kept(place, npu.nodes[0], what))
            if what == "branch" and not branch.fallback:
                for source in self._tested_by(branch.nodes[0]):
                    self.kept.setdefault(id(source), Kept(place, npu.nodes[0], "test"))

    def _tested_by(self, test: cst.CSTNode) -> Iterator[cst.BaseExpression]:
        """The values a kept test reads through the module's own names (`self.gpu = torch.cuda.is_available()`):
        converted, they would make the kept branch test for the NPU."""
        stack = [test]
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.Name, cst.Attribute)):
                for key in dict.fromkeys((code_of(node), short_name(node))):
                    if _NPU not in self._bound.get(key, {_NPU}):
                        yield from self._sources.get(key, ())
            stack.extend(children(node))

    def _identities(self, nodes: NodeIndex) -> None:
        """`is_nvidia = platform == "cuda"` stays; so does a branch it or `torch.version.hip` guards."""
        for assign in nodes.of(cst.Assign):
            for target in assign.targets:
                code = code_of(target.target)
                if any(p.fullmatch(code) for p in self.spec.identity_names):
                    self.kept.setdefault(id(assign.value), Kept(id(assign), None, "identity"))
        for test in nodes.of(cst.If):
            devices = self.devices(test.test)
            if devices and devices <= _VENDOR:
                for node in (test.test, test.body):
                    self.kept.setdefault(id(node), Kept(id(test), None, "vendor"))
                self.vendor_reads.extend(_reads(test.body, self.spec.vendor_reads))

    def _enumerations(self, nodes: NodeIndex) -> None:
        """A list of every supported type (`choices=`, `parametrize`, `runs_on`) without "npu"."""
        for call in nodes.of(cst.Call):
            enumerating = short_name(call.func) in self.spec.enumerating_calls
            if any(self.spec.accelerator_named(_string(a.value) or "") for a in call.args):
                continue  # parametrize("accelerator", [...]): Lightning's names (engine/literals/roles.py)
            for arg in call.args:
                if isinstance(arg.value, _SEQUENCES) and (
                    enumerating
                    or (arg.keyword is not None and arg.keyword.value in self.spec.enumerating_keywords)
                ):
                    self._widen(arg.value)

    def _widen(self, sequence: cst.List | cst.Tuple | cst.Set) -> None:
        values = [_string(e.value) for e in sequence.elements]
        if _NPU in values or "cuda" not in values or self.spec.accelerator_types.intersection(values):
            return  # holding "tpu" or "gpu": Lightning's accelerator names (engine/literals/roles.py)
        if any(v is not None and v.partition(":")[0] not in self.spec.dispatch_devices for v in values):
            return  # parametrize("name", ["cuda", "other"]): not a list of device types
        self.widened[id(sequence)] = values.index("cuda")
        self.kept.setdefault(
            id(sequence.elements[values.index("cuda")].value), Kept(id(sequence), None, "listed")
        )

    # ---- questions ---------------------------------------------------------------------------
    def keeps(self, node: cst.CSTNode) -> Kept | None:
        """Why the transformer leaves `node` (an original node) as written; None: it converts."""
        return self.kept.get(id(node))


def _detected(link: cst.If, literals: Callable[[cst.BaseExpression], Devices]) -> Devices:
    """`if name is None: ... name = "npu"`: a step of a detection cascade selects the device
    types it assigns to the name it tests (DeepSpeed's accelerator detection)."""
    test = link.test
    if not (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Is)
        and code_of(test.comparisons[0].comparator) == "None"
    ):
        return _NONE
    subject = code_of(test.left)
    found: set[str] = set()
    stack: list[cst.CSTNode] = [link.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign) and any(code_of(t.target) == subject for t in node.targets):
            found |= literals(node.value)
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(children(node))
    return frozenset(found)


def _reads(body: cst.CSTNode, names: set[str]) -> Iterator[cst.CSTNode]:
    """The vendor-only reads under a vendor branch (`get_device_capability()`, `.gcnArchName`)."""
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Attribute) and node.attr.value in names:
            yield node
            continue
        stack.extend(children(node))


def _subjects(test: cst.BaseExpression, selects: Callable[[cst.BaseExpression], Devices]) -> frozenset[str]:
    """The expressions a test compares with literals or enum members (`device.type` of `device.type == "npu"`);
    not a call that `selects` a device itself (`os.getenv("FORCE_NPU") == "1"`)."""
    found: set[str] = set()
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BooleanOperation):
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
        elif isinstance(node, cst.Comparison):
            for side in (node.left, *(t.comparator for t in node.comparisons)):
                if not _constant(side) and not (isinstance(side, cst.Call) and selects(side)):
                    found.add(code_of(side))
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("startswith", "endswith")
        ):
            found.add(code_of(node.func.value))
    return frozenset(found)


def _constant(node: cst.BaseExpression) -> bool:
    """A literal, a sequence of literals or an enum member (`DeviceType.NPU`)."""
    if isinstance(node, _SEQUENCES):
        return all(_constant(e.value) for e in node.elements)
    if isinstance(node, cst.Attribute):
        return node.attr.value.isupper()
    return isinstance(node, (cst.SimpleString, cst.Name)) and not (
        isinstance(node, cst.Name) and node.value not in ("None", "True", "False")
    )


def _items(node: cst.BaseExpression) -> Iterable[cst.BaseExpression]:
    if isinstance(node, _SEQUENCES):
        return [e.value for e in node.elements]
    return [node]


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _returns(function: cst.FunctionDef) -> Iterator[cst.BaseExpression]:
    """The values a function returns (device_flow.returns: not those of nested functions)."""
    return (r.value for r in returns(function) if r.value is not None)


# The policy, as the rules reference prints it (docs/rules.md); the code above is its letter.
POLICY = """\
Code often picks per device: `if is_torch_cuda_available(): ... elif is_torch_npu_available():
...`, `{"cuda": "nccl", "npu": "hccl"}`, `match device.type:`, `class DeviceType(Enum): CUDA =
"cuda"; NPU = "npu"`. Before anything is rewritten the converter finds each such dispatch and
what each alternative selects. The lists behind it are rule data (`device_context` of TP103:
`predicates`, `predicate_names`, `identity_names`, `dispatch_devices`, `vendor_reads`,
`enumerating_keywords`, `enumerating_calls`, `cuda_only_apis`, `cuda_only_strings`).

- **What selects a device**: an availability predicate (`torch.cuda.is_available()`,
  `torch.npu.is_available()`, `torch.backends.mps.is_available()`, transformers' and
  accelerate's `is_torch_npu_available()` / `is_npu_available()` and kin, `hasattr(torch,
  "npu")`), `torch.version.cuda` / `torch.version.hip`, a name spelled like a predicate
  (`is_npu`, `use_cuda`, `self.on_npu`, also imported from the project's other modules), a
  function of the module returning any of these (followed through its own helpers), a variable
  or attribute bound to one, a comparison with device-type literals (`dev.type == "npu"`,
  `device in ("cuda", "xpu")`, `.startswith("npu")`) and an enum member named like a device
  type (`DeviceType.NPU`); a step of a detection cascade (`if name is None: ... name =
  "npu"`) selects what it assigns to the name it tests. Tests of an if/elif chain, of `if` statements that follow one another
  and of a chain of conditional expressions are one dispatch per subject they compare; an
  availability predicate belongs to each.
- **Kept as written, beside an NPU alternative** (a note names the NPU alternative's line):
  every other alternative that selects a device (CUDA, HIP, XPU, MPS, CPU) and the `else` of a
  dispatch that has an NPU branch, an entry of a dict that has an NPU key, a member of a class
  that has an NPU member, the cases of a `match` that has an NPU case, the items of a list, tuple
  or set that holds `"npu"` (`choices=["cpu", "cuda", "npu"]`, `dev in ("cuda", "npu")`), and
  the value a kept test reads through the module's own name (`self.gpu =
  torch.cuda.is_available()`), and, in a module that defines an NPU predicate
  (`def is_npu_available()`), what its other predicates return (`def use_cuda(): return
  torch.cuda.is_available()`: other modules branch on both). Nothing inside is rewritten or
  reported. Why: the author already
  routes the NPU to the branch written for it; a converted CUDA branch is dead on the NPU, wrong
  on the GPU the authors still run, and a converted key or item duplicates the NPU's.
- **Converted as before**: a dispatch with no NPU alternative (`if torch.cuda.is_available():
  torch.cuda.synchronize()`): its CUDA branch is the port's only way to the device.
- **A vendor, not a device** (kept, reported): a name the rule data spells like a vendor test
  (`is_nvidia = platform == "cuda"`) keeps its value; a branch it or `torch.version.hip` guards
  is never true on the NPU, so it stays, and each NVIDIA- or AMD-only read in it
  (`get_device_capability()`, `.major`, `gcnArchName`) is reported for a look.
- **A device test guarding CUDA-only code** (kept, reported): `x.device.type == "cuda"` / `!=`
  or `x.is_cuda` whose CUDA side leads only to code no NPU runs: a cuDNN-only operator
  (`torch._C._jit_get_operation("aten::cudnn_convolution_backward_weight")`, `torch.cudnn_*`),
  `torch.backends.cudnn`, a CUDA extension (`torch.utils.cpp_extension`, a `"*.cu"` source, a
  name bound to one: `_plugin.bias_act(...)`), `triton`, or a function of the module using any of
  these (rule data: `cuda_only_apis`, `cuda_only_strings`). For `!=` with an early `return`, the
  CUDA side is what the `if`s testing the function's result run (`if _should_use_custom_op(x):`,
  stylegan2-ada's conv2d_gradfix). Why: converted, the test would send Ascend into the CUDA-only
  implementation; kept, the NPU takes the portable path the CPU takes. A CUDA side that does
  anything else (`torch.cuda.synchronize()`) converts as before (engine/devices/cuda_only.py).
- **Lists of device types**: a list, tuple or set of device types that enumerates what the code
  supports (the value of `choices=` / `only_for=`, an argument of `parametrize`, `runs_on`)
  gets `"npu"` beside its `"cuda"` (`["cpu", "cuda"]` -> `["cpu", "cuda", "npu"]`,
  `runs_on(["cuda"])` -> `runs_on(["cuda", "npu"])`); one that already holds `"npu"` is kept,
  never given a duplicate; one with other words (`["cuda", "other"]`) or Lightning's accelerator
  names (`"gpu"`, `"tpu"`) is not a list of device types. Any other single device choice
  (`default="cuda"`, `devices = ["cuda"]`) is converted in its place.
"""
