"""What is this string literal? One pass over the module answers it for every literal, with evidence.

Before the rewrite, from the read-only walk (engine/syntax/node_index.py), each string literal gets one role:
- *environment variable*: it names one where the environment is read or written
  (engine/literals/environment.py);
- *prose*: a docstring, a message (an assert's message, arguments of print, logging, warnings,
  exceptions, and of the `format` / `join` / `str` calls inside them), a `help=`-like keyword, an
  option name given to `add_argument`, an attribute name given to `getattr` and its kin;
- *data key*: a dict key or a subscript, except inside an argument that takes a device (the
  members of a `Literal[...]` type are values, not keys);
- *device*: it stands where a device goes, or its place shows it is one (engine/devices/device_evidence.py);
- *user text*: its place shows it is the user's name (`__all__`, `dest=`, a path piece);
- *code*: nothing marks it; rules that match by pattern (backend names, tensor-type names)
  decide, and the device rule keeps a bare `"cuda"` there and reports it.
Every list that decides a role is rule data: `device_context` of the device rule
(rules/builtin/device.json) and the EnvVarRules. The transformer asks `of(node)`; the string
hooks ask `device(...)`; `explain` prints `explain(...)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from ms_fmk_transplt.engine.devices import (
    DeviceAnswer,
    DeviceContext,
    DeviceSpec,
    Places,
    literal_type,
    short_name,
)
from ms_fmk_transplt.engine.interface import Claims
from ms_fmk_transplt.engine.literals.environment import Environment
from ms_fmk_transplt.engine.project import FirstParty
from ms_fmk_transplt.engine.syntax import NodeIndex, children

_STRINGS = (cst.SimpleString, cst.FormattedString)


class Role(str, Enum):
    """The one role of a string literal."""

    DEVICE = "device"
    ENV_NAME = "environment variable"
    PROSE = "prose"
    DATA_KEY = "data key"
    USER_TEXT = "user text"
    CLAIMED = "kept by a value hook"  # a map_location key: where a checkpoint was saved
    CUDA_ALTERNATIVE = "CUDA's alternative"  # a device beside the NPU's own (engine/devices/twins.py)
    CODE = "code"  # no evidence either way


@dataclass(frozen=True)
class Evidence:
    """A literal's role and why it has it."""

    role: Role
    why: str


_CODE = Evidence(Role.CODE, "nothing marks it as a device or as text")


class LiteralRoles:
    """The roles of one module's string literals; built once before the transform."""

    def __init__(
        self,
        spec: DeviceSpec,
        qualify: Callable[[cst.CSTNode], str | None],
        environment: Environment,
        project: FirstParty | None = None,
    ) -> None:
        self.spec = spec
        self.context = DeviceContext(spec, qualify, project)
        self.places = Places()  # dicts and dispatch chains that may already have an NPU alternative
        self.environment = environment
        self._roles: dict[int, Evidence] = {}  # id(literal) -> prose, data key, environment name
        self._device_args: dict[int, str] = {}  # id(literal) -> the argument taking a device it is in
        self.spelled: dict[int, str] = {}  # id(first piece) -> the value its pieces spell: 'cu' 'da'

    def scan(self, nodes: NodeIndex, devices: bool = True) -> None:
        """Give the module's literals their roles (`devices=False`: no device rule is loaded)."""
        self.environment.scan(nodes)
        if devices:
            self.context.scan(nodes)
            self.places.scan(nodes)
        for statement in nodes.of(cst.Expr):
            if isinstance(statement.value, (*_STRINGS, cst.ConcatenatedString)):
                self._mark(statement.value, Evidence(Role.PROSE, "a docstring or bare string statement"))
        for check in nodes.of(cst.Assert):
            if check.msg is not None:
                self._prose(check.msg, "an assert's message")
        for call in nodes.of(cst.Call):
            self._call(call)
        for arg in nodes.of(cst.Arg):
            if arg.keyword is not None and arg.keyword.value in self.spec.message_keywords:
                self._prose(arg.value, f"{arg.keyword.value}= is a message")
        for whole in nodes.of_any(cst.ConcatenatedString, cst.BinaryOperation, cst.Call):
            self._spell(whole)
        for element in nodes.of(cst.DictElement):
            self._key(element.key, "a dict key")
        for subscript in nodes.of(cst.Subscript):
            if literal_type(subscript):  # Literal["cuda", "cpu"]: a type's members, not keys
                continue
            for item in subscript.slice:
                if isinstance(item.slice, cst.Index):
                    self._key(item.slice.value, "a subscript")

    def _call(self, call: cst.Call) -> None:
        name = short_name(call.func)
        positional = [a for a in call.args if a.keyword is None]
        if name in self.spec.message_calls or name.endswith(("Error", "Exception", "Warning")):
            for arg in call.args:
                self._prose(arg.value, f"an argument of the message {name}(...)")
        elif name in self.spec.option_calls:
            for arg in positional:
                self._prose(arg.value, f"an option name given to {name}")
        elif name in self.spec.attribute_name_calls:
            for arg in positional[:2]:
                self._prose(arg.value, f"an attribute name given to {name}")
        for arg, why in self.context.device_slots(call):
            self._under(arg.value, self._device_args, why)
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in self.spec.backend_keywords:
                self._under(arg.value, self._device_args, f"{arg.keyword.value}= takes a backend")

    def _spell(self, whole: cst.BaseExpression) -> None:
        """A value spelled in literal pieces ('cu' 'da', "cu" + "da", "".join(["cu", "da"])), by its first piece."""
        pieces = spelled_pieces(whole)
        if pieces and len(pieces) > 1:
            value = "".join(str(p.evaluated_value) for p in pieces)
            if len(value) > len(self.spelled.get(id(pieces[0]), "")):
                self.spelled[id(pieces[0])] = value

    def _mark(self, node: cst.CSTNode, evidence: Evidence) -> None:
        for child in self._walk(node, stop=False):
            self._roles.setdefault(id(child), evidence)

    def _under(self, node: cst.CSTNode, into: dict[int, str], why: str) -> None:
        for child in self._walk(node, stop=False):
            into.setdefault(id(child), why)

    def _prose(self, node: cst.CSTNode, why: str) -> None:
        """The literals of a message; code nested in it (`print(torch.zeros(2, device="cuda"))`) is code."""
        evidence = Evidence(Role.PROSE, why)
        for child in self._walk(node, stop=True):
            self._roles.setdefault(id(child), evidence)

    def _walk(self, node: cst.CSTNode, stop: bool) -> Iterable[cst.CSTNode]:
        """The string literals below `node`; with `stop`, not below a comparison or a call that is code."""
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, _STRINGS):
                yield current
            if stop:
                if isinstance(current, cst.Comparison):
                    continue
                if (
                    isinstance(current, cst.Call)
                    and short_name(current.func) not in self.spec.message_continues
                ):
                    continue
            stack.extend(children(current))

    def _key(self, node: cst.BaseExpression, why: str) -> None:
        if isinstance(node, _STRINGS):
            self._roles.setdefault(id(node), Evidence(Role.DATA_KEY, why))

    def claim(self, claims: Claims) -> None:
        """What a value hook marked before the traversal: its device arguments and devices, and
        the literals it keeps (they outrank every other role)."""
        for arg in claims.device_args:
            self._under(arg.value, self._device_args, "the argument a loader takes as its map_location")
        for node in claims.devices:
            self.context.devices.setdefault(id(node), "where the loaded storages go (map_location)")
        for node in claims.kept:
            self._roles[id(node)] = Evidence(Role.CLAIMED, claims.why)

    # ---- questions -------------------------------------------------------------------------------
    def of(self, node: cst.CSTNode) -> Evidence:
        """The role the transformer acts on: environment name, prose, data key, device argument or code."""
        key = id(node)
        env = self.environment.found.get(key)
        if env is not None:
            return Evidence(Role.ENV_NAME, env)
        evidence = self._roles.get(key)
        if evidence is not None and evidence.role is Role.DATA_KEY:
            if key in self._device_args:
                return Evidence(Role.DEVICE, self._device_args[key])
            if key in self.context.devices:  # {"cuda": "nccl"}[device.type]
                return _CODE
        if evidence is not None:
            return evidence
        if key in self._device_args:
            return Evidence(Role.DEVICE, self._device_args[key])
        return _CODE

    def in_device_arg(self, node: cst.CSTNode) -> bool:
        """Inside an argument that takes a device (`device=`, `.to(...)`) or a backend."""
        return id(node) in self._device_args

    def device(self, node: cst.BaseExpression, value: str, old: str) -> tuple[DeviceAnswer, str]:
        """Is a literal the device rule's pattern matches a device here, and why."""
        why = self._device_args.get(id(node))
        if why is not None:
            return DeviceAnswer.DEVICE, why
        return self.context.verdict(node, value, old)

    def rival(self, node: cst.CSTNode, wanted: Callable[[str], bool]) -> cst.SimpleString | None:
        """The literal in another branch of the dispatch `node` belongs to (a dict's keys, an if/elif
        chain's or a match's tests of one subject) whose value is `wanted` (engine/devices/twins.py)."""
        return self.places.rival(node, wanted)

    def explain(
        self,
        node: cst.CSTNode,
        value: str,
        pattern: re.Pattern[str],
        old: str,
        converted: Callable[[str], bool] | None = None,
    ) -> Evidence:
        """The role with the device evidence spelled out (for `ms_fmk_transplt explain`); `pattern`,
        `old` and `converted` (is a value what it writes?) are the device rule's."""
        evidence = self.of(node)
        if evidence.role is not Role.CODE or not isinstance(node, cst.SimpleString):
            return evidence
        if not self.context.matches(node, value, pattern, old):
            whole = self.spelled.get(id(node))
            if whole is not None and pattern.fullmatch(whole):
                return Evidence(
                    Role.CODE, f"the first piece of {whole!r}, spelled in pieces: reported, not rewritten"
                )
            return Evidence(Role.CODE, "not device-looking; rules matching its text decide")
        verdict, why = self.device(node, value, old)
        rival = self.rival(node, converted) if converted is not None else None
        if verdict is DeviceAnswer.DEVICE and rival is not None:
            return Evidence(
                Role.CUDA_ALTERNATIVE,
                f"{why}; kept: another branch of its dispatch has the NPU's {rival.value}",
            )
        if verdict is DeviceAnswer.DEVICE:
            return Evidence(Role.DEVICE, why)
        if verdict is DeviceAnswer.TEXT:
            return Evidence(Role.USER_TEXT, why)
        return Evidence(Role.CODE, why)


def spelled_pieces(node: cst.BaseExpression) -> list[cst.SimpleString] | None:
    """The plain literals a string is spelled from, in order; None unless it is only literals."""
    if isinstance(node, cst.SimpleString):
        return [node] if isinstance(node.evaluated_value, str) else None
    parts: tuple[cst.BaseExpression, ...]
    if isinstance(node, cst.ConcatenatedString) or (
        isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)
    ):
        parts = (node.left, node.right)
    elif (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "join"
        and isinstance(node.func.value, cst.SimpleString)
        and node.func.value.evaluated_value == ""
        and len(node.args) == 1
        and isinstance(node.args[0].value, (cst.List, cst.Tuple))
    ):
        parts = tuple(e.value for e in node.args[0].value.elements)
    else:
        return None
    found: list[cst.SimpleString] = []
    for part in parts:
        pieces = spelled_pieces(part)
        if pieces is None:
            return None
        found.extend(pieces)
    return found


# The policy, as the rules reference prints it (docs/rules.md); the code above is its letter.
POLICY = """\
Every string literal gets one role before anything is rewritten, with the evidence for it;
`ms_fmk_transplt explain FILE[:LINE]` prints both. The lists behind each role are rule data
(`device_context` of TP103, the TP4xx variable names); the torch functions that take a device,
and the device-taking methods of torch's test base classes (`self.create_pg("cuda")`), are read
from the pinned torch by `tools/derive_device_apis.py`.

- **Converted as a device**, in any file: `"cuda"` / `"cuda:N"` (and `f"cuda:{i}"`, `"cuda:%d"`,
  `"cuda:" + str(i)`, `"cuda:{}".format(i)`, and the whole `"cuda"` piece of
  `"%s:%d" % ("cuda", i)`, `"{}:{}".format("cuda", i)`, `":".join(["cuda", str(i)])`) where a
  device goes: an argument a torch function takes as `device` / `device_type` (positional or
  keyword, `functools.partial` too, or through a variable bound to one:
  `scope = autocast if amp else nullcontext; with scope("cuda")`), `device=` / `device_map=` /
  `map_location=` anywhere, `.to(...)`; compared with something device-typed (`x.device.type`,
  `str(x.device)`, `devices[0]`, `torch.device(d).type`, a variable bound to a device such as
  `dst = torch.device(s)` or `name = get_accelerator().device_name()`, `match dev.type: case
  "cuda":`, `assertEqual(p.device.type, ...)`, `.startswith(...)` of a device); bound to a
  device-named variable, attribute, parameter, dict key, dataclass field,
  `setattr(ns, "device", ...)`, `--device` option, Enum named like a device, or returned by a
  function named like one (also through `return self._kind`); bound to a variable or a class
  attribute the module hands to a device-taking API (`device_map=self.device_map_for_quantization`),
  iterated by a loop whose variable is one (`for dev in ["cpu"] + ["cuda"]: torch.device(dev)`),
  given to a function the module defines in the place of a device parameter
  (`def _capture(target_device)`, `_capture("cuda")`), or to a parameter it stores on `self`
  where an attribute reaches a device API (`self.where = where`), or as a dataclass field a
  property hands to one (`accel: str = "cuda"`, `torch.device(self.accel)`); given to the
  project's own function or class in another module whose parameter reaches a device API there,
  directly, through `self`, a dataclass field or another of the project's functions
  (`move(x, "cuda")` with `def move(batch, target): return batch.to(target)`, imported
  absolutely, relatively or through a package that re-exports it (`from .helpers import move` or
  `from .helpers import *` in its `__init__.py`), a method of an instance of the project's class
  (`r = Runner(); r.run(target="cuda")`, `self.runner.move("cuda")`, an instance a factory of the
  project returns, `r = make_runner()`, or a parameter annotated with the class, `def go(r:
  Runner)`; a method inherited from a base class in another module), or a function handing its
  `*args` / `**kwargs` on to one (`helper(**{"where": "cuda"})` too): engine/project/project_devices.py;
  a value of the project's own enum, `TimerType("cuda")`, is a label, neither converted nor
  reported); returned by the project's top-level function, or bound to its top-level constant,
  whose value a module of the project hands to a device API (`def pick(): return "cuda"` with
  `x.to(pick())` or `dev = pick(); model.to(dev)` in another module, stored on an object and
  read from there, `cfg.device = pick()` / `state["device"] = pick()` then `model.to(cfg.device)`,
  or handed back by another function, `def outer(): return pick()` with `x.to(outer())`;
  `ACCEL = "cuda"` imported and given to `.to()`: engine/project/project_results.py; a function whose result every module only
  prints, logs or compares is a label's: kept, not reported; a literal a module compares with the
  result of such a function, `if kernel_kind() == "cuda":` (also `in`, `!=`, through a variable,
  `.startswith(...)`, the cases of `match kernel_kind():`), is what the result is: a device when a
  module hands the result to a device API (a dispatch with an `== "npu"` branch keeps it as
  written), a label, kept and not reported, when the function returns only literals that every
  module shows or compares: engine/devices/project_compares.py); keys of a dict the file looks up by a
  device type; members of the Literal type of a device-named target (`device: Literal["cuda"] =
  "cuda"`: a type checker, pydantic or a typed CLI would refuse the new value otherwise). An index (`"cuda:0"`) is proof on its own: nobody names a folder that.
- **Converted by convention** (marked *heuristic* in the log): a literal beside another device
  type (`"cuda" if ok else "cpu"`, `["cpu", "cuda"]`, `Literal["cpu", "cuda"]`, a
  `parametrize("device", [...])` list) or
  picked by a CUDA test (`"cuda" if torch.cuda.is_available() else x`, `if ngpu > 0`). Why: in
  code that uses torch these shapes are devices in every real occurrence we labelled, and a
  missed device fails on the NPU at once ("Torch not compiled with CUDA enabled"), so the port
  would need a hand edit for nothing.
- **Kept, the user's text**: docstrings, messages (an assert's message, print, logging, warnings,
  exceptions and the `format` / `join` inside them), `help=` and similar keywords, option names,
  `dest=`, `__all__`,
  attribute names given to `getattr` and its kin, path pieces, dict keys and subscripts that
  label data (f-strings too: `generators[f"cuda:{i}"]`), pieces of an f-string that is a name
  rather than a device (`f"{'cuda' if c else 'cpu'}_time_total"`), and Lightning accelerator
  names (`Trainer(accelerator="cuda")`, a list holding `"gpu"`, `"tpu"` or `"auto"`,
  `parametrize("accelerator", [...])`: Lightning's own registry, which has no "npu" entry). Why:
  renaming a user's key, label or path breaks a program that ran before, silently; code nested in
  a message (`print(x.to("cuda"))`) is code.
- **Kept, CUDA's alternative beside the NPU's own** (a note, not an issue): a literal that would
  be converted where the code already picks between alternatives by one subject and another
  alternative is what the rule would write: a key of a dict that has the `"npu"` key too
  (`{"cuda": "nccl", "npu": "hccl"}`), a test of an if/elif chain, of directly consecutive `if`
  statements or of a chain of conditional expressions comparing the same subject with `"npu"` in
  another branch (`==`, `!=`, `in`, `is`, `.startswith("npu:")`, inside `and` / `or` / `not`), a
  case of a `match` with a `case "npu":`; `"nccl"` beside `"hccl"` alike. Why: the author already
  routes the NPU to the branch written for it; converting would duplicate a dict key (the later
  value wins) or shadow that branch. The whole CUDA branch stays as written, and a list holding
  `"npu"` keeps its `"cuda"`: see "Code written for several devices" below.
- **Reported, not converted**, because the change would be wrong or is not the converter's to
  make: a device spelled only by pieces that match together (`'cu' 'da'`, `"cu" + "da"`,
  `"".join(["cu", "da"])`: the converter rewrites whole literals, not an expression the user
  composed; such spellings are rare); a value compared as parsed back from a command-line
  argument the same file writes (`parse(["--device=cuda:0"])`, then `opts["device"] ==
  "cuda:0"`: converting the comparison alone breaks the test, and the argument is the user's
  text); Lightning / Fabric asked for CUDA by `accelerator="gpu"`, literally or through a
  variable or attribute the module binds or defaults to it (`args.accelerator` of
  `add_argument("--accelerator", default="gpu")` too): Lightning ships no NPU accelerator, so
  there is nothing to write instead; the report says to subclass its Accelerator and pass an
  instance.
- **Always reported when kept in a file that imports torch**: a device-looking literal (exact
  `"cuda"` / `"cuda:N"`) that is a dict key, a subscript, a path piece, a piece of a name or an
  accelerator name, and every one with no evidence either way ("not provably a device"). Why: a
  silent miss is the worst outcome; a reported one costs the user one look. Messages, option
  names, attribute names and `__all__` entries are not reported: they cannot be used as a device.
- **Environment variables**: renamed where the environment is read or written (os.environ and its
  methods, `os.getenv`, `env={...}` and dicts passed as `env=`, `monkeypatch.setenv`,
  `mock.patch.dict(os.environ, ...)`, a variable used as a name in these, each branch of a
  ternary bound to it); the same name in any other dict is the user's. A literal compared with
  a loop variable over the environment's names (`for k in os.environ: if "NCCL" in k`) is part
  of a variable's name, never a backend.
"""
