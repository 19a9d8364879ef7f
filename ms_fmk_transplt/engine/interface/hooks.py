"""The hooks a rule kind gives the engine: what the transformer calls, and what it hands them.

A kind whose rewrite needs its own code compiles each rule into an entry, a frozen dataclass
defined in the kind's module (`ruleset/kinds/<kind>.py`), that implements one of these protocols;
the kind adds it to `Tables.hooks`, the one registry, in the slot of its node class and interface
(the `Slot` constants at the end; `node_slot` for the generic `NodeHook`, which needs no engine
change) under its lookup key (engine/interface/hook_registry.py). The engine keeps traversal,
name resolution, the string/device/environment contexts, import planning and the composition of
several hooks on one node; the hook holds the matching details, the rewrite and the finding.
Entries are pickled to worker processes and into the cache, so they must be module-level classes.

Qualified-name renames (renamed functions and modules, module members, unsupported APIs) are name
hooks (`NameHook`) keyed by the dotted prefix they cover: the engine keeps the name resolution
(qualifying a node through the file's imports, its bindings) and offers it as `Site` services
(`qualify`, `replace_name`, `report_match`); the hook decides what the name becomes. The import
the rewrites need is an `ImportHook`: hooks request it through the `Site`, the engine places it.
The support lists are a `SupportHook`: the engine says what a use's syntax shows and counts or
reports the verdict the hook gives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import libcst as cst

from ms_fmk_transplt.engine.devices import DeviceAnswer, DeviceContext
from ms_fmk_transplt.engine.interface.hook_registry import GENERIC, Slot
from ms_fmk_transplt.engine.interface.rule import Rule
from ms_fmk_transplt.engine.naming import Bindings
from ms_fmk_transplt.records import Finding, Operation, Support

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.syntax import NodeIndex


class Roles(Protocol):
    """What a hook reads of the literal pass (engine/literals/roles.py's `LiteralRoles` implements it)."""

    context: DeviceContext  # device evidence of the file (engine/devices/device_evidence.py)
    spelled: dict[int, str]  # id(first piece) -> the value literal pieces spell: 'cu' 'da'

    def in_device_arg(self, node: cst.CSTNode) -> bool:
        """Inside an argument that takes a device (`device=`, `.to(...)`) or a backend."""
        ...

    def device(self, node: cst.BaseExpression, value: str, old: str) -> tuple[DeviceAnswer, str]:
        """Is a literal the device rule's pattern matches a device here, and why."""
        ...

    def rival(self, node: cst.CSTNode, wanted: Callable[[str], bool]) -> cst.SimpleString | None:
        """The literal in another branch of the dispatch `node` belongs to whose value is `wanted`."""
        ...


class NameOwner(Protocol):
    """Who owns a short name in this file (engine/naming/ownership.py's `NameOwnership` implements it)."""

    bindings: Bindings

    def own_method(self, func: cst.Attribute) -> bool:
        """`self.cuda()` in a file whose class defines `cuda`."""
        ...

    def assigns(self, owner: cst.BaseExpression, attribute: str) -> bool:
        """The file assigns `attribute` on this very object."""
        ...

    def assigns_anywhere(self, attribute: str) -> bool:
        """The file assigns an attribute of this name on some object."""
        ...

    def unbound(self, name: str) -> bool:
        """Neither bound nor imported anywhere in the file."""
        ...

    def first_keep(self, name: str) -> bool:
        """True the first time a kept `name` is reported in this file."""
        ...


class Site(Protocol):
    """What a hook sees of the file being converted (the transformer implements it).

    Nodes given to the report functions are original nodes: positions refer to the input file.
    """

    @property
    def roles(self) -> Roles:
        """What is this string literal: a device, prose, a key? (engine/literals/roles.py)"""
        ...

    @property
    def names(self) -> NameOwner:
        """Who owns a short name in this file (engine/naming/ownership.py)."""
        ...

    @property
    def release(self) -> str:
        """The Ascend release the run converts for."""
        ...

    @property
    def imports_torch(self) -> bool:
        """The file imports torch itself (a kept device-looking literal is then reported)."""
        ...

    def qualify(self, node: cst.CSTNode) -> str | None:
        """The qualified name an original Name/Attribute chain refers to, if the imports tell."""
        ...

    @property
    def half_precision(self) -> bool:
        """The file names float16/bfloat16, autocast or `.half()` (a heuristic: not which tensors)."""
        ...

    def report(
        self, node: cst.CSTNode, rule: Rule, operation: Operation, heuristic: bool = False, **fields: Any
    ) -> None:
        """A finding rendered from the rule's message template with `fields`."""
        ...

    def report_unsupported(
        self, node: cst.CSTNode, rule: Rule, what: str, suggestion: str = "", api: str = ""
    ) -> None:
        """An UNSUPPORTED finding: `what` cannot run on the NPU as written."""
        ...

    def report_message(
        self,
        node: cst.CSTNode,
        rule: Rule,
        operation: Operation,
        message: str,
        heuristic: bool = False,
        api: str = "",
        support: Support | None = None,
        related: cst.CSTNode | None = None,
        within: int = 0,
        suggestion: str = "",
    ) -> None:
        """A finding with a message the hook wrote itself (`api` and `support` for an issue the
        reports list under that API with that status; `{line}` in it names the line of `related`;
        `within`: the finding is on that line of the node, counted from its first)."""
        ...

    def report_kept(self, node: cst.CSTNode, rule: Rule, message: str) -> None:
        """Something left as written that may be wrong on the NPU (a heuristic UNSUPPORTED finding)."""
        ...

    def renamed(self, name: str) -> tuple[str, Rule] | None:
        """What a qualified API name becomes under the rules, and the rule that renames it (None:
        no rule does)."""
        ...

    def report_match(self, node: cst.CSTNode, match: Match) -> None:
        """A qualified name a name hook resolved: MODIFY when replaced, else UNSUPPORTED (a class an
        `isinstance` test names is no use: not reported)."""
        ...

    def replace_name(
        self, original: cst.Attribute, updated: cst.Attribute, target: str
    ) -> cst.BaseExpression:
        """The chain written as the dotted `target`: under the name its root is bound to after the
        rewrites, else spelled out whole, with the import that then needs planned."""
        ...

    def require_torch_npu(self) -> None:
        """The file's rewrites need `import torch_npu` (for a rewrite no finding of a rule that
        `needs_torch_npu` marks)."""
        ...


@dataclass(frozen=True)
class Match:
    """What a qualified name becomes: `prefix` of `name` is what `hook` covers, replaced by `new`
    (None: kept and reported, with `suggestion`)."""

    rule: Rule
    name: str
    prefix: str
    new: str | None
    suggestion: str = ""
    hook: NameHook | None = field(default=None, compare=False)

    @property
    def target(self) -> str:
        """The dotted name the reference is written as: the replacement and the rest of the name
        (the name itself when nothing replaces it)."""
        return (self.new if self.new is not None else self.prefix) + self.name[len(self.prefix) :]


class NameHook(Protocol):
    """What a qualified name becomes, keyed by a dotted prefix of it (`QUALIFIED`): the engine
    resolves every name a file uses through its imports and finds the hooks of its longest
    covered prefix (`Tables.lookup`), which also rename its imports and classify it."""

    # the hook knows its prefix's members one by one: on a member it answers before a hook that
    # renames the prefix whole, on the prefix itself after it
    members: ClassVar[bool]

    @property
    def rule(self) -> Rule:
        """The rule whose findings it reports."""
        ...

    @property
    def rewrites(self) -> bool:
        """It replaces names (False: it only reports them)."""
        ...

    def resolve(self, name: str, prefix: str, rest: list[str]) -> Match | None:
        """What `name` (`prefix` and the `rest` of its parts) becomes, or None: not this hook's."""
        ...

    def rewrite_reference(
        self, site: Site, original: cst.Attribute, updated: cst.Attribute, match: Match
    ) -> cst.BaseExpression:
        """An attribute chain `match` resolved: reported, and written as its target (`replace_name`)."""
        ...


@dataclass(frozen=True)
class Classified:
    """One classified use that the reports list (supported uses are only counted)."""

    rule: Rule
    support: Support
    message: str
    suggestion: str
    dtypes: str
    source: str  # what decided: a list, an NPU kernel's absence, the code's dtype


class Tally(Enum):
    """A use the reports do not list: counted as supported (by a list or torch.npu's surface, or
    by an NPU kernel of its ATen operator), or no API use at all."""

    NO_USE = "no_use"
    SUPPORTED = "supported"
    BY_KERNEL = "by_kernel"


class SupportHook(Protocol):
    """The release's verdict on API uses (the support lists), filed under "*" of `SUPPORT`; the
    engine tells it what the use's syntax shows (engine/reporting/support.py reads libcst's tree,
    engine/conversion/fast_path.py CPython's ast) and counts or reports the answer."""

    @property
    def rule(self) -> Rule:
        """The rule that reports names absent from every list."""
        ...

    def judge(
        self, name: str, invoked: bool, dtype_shown: Callable[[str], str | None], rewritten: bool
    ) -> Classified | Tally:
        """The verdict on one use of API `name`: `invoked` (a call, a decorator, a base class),
        `dtype_shown(dtypes)` (a dtype the code shows outside `dtypes`), `rewritten` (`name` is a
        rule's target)."""
        ...

    def lists_method(self, method: str) -> bool:
        """The lists hold `torch.Tensor.<method>` (`x.method()` is matched by name: a heuristic)."""
        ...


class ImportReason(Enum):
    """Why the engine placed the inserted import where it did; the hook words the finding."""

    NEEDED = "needed"  # a rewrite needs the module, or spelled out its name
    ACCELERATOR = "accelerator"  # only a use of a `needed_by` API (torch.accelerator) needs it
    ENTRY_POINT = "entry_point"  # only the file being an entry point that imports `after` needs it
    BEFORE_OWN_IMPORT = "before_own_import"  # again, above a converted line that needs it first


class ImportHook(Protocol):
    """The import a file's rewrites need (`import torch_npu`), filed under "*" of `IMPORTS`: the
    hook says which module, after which import, and which uses alone need it; hooks ask for it
    through the `Site` (`require_torch_npu`, or a rule that `needs_torch_npu`), and the engine
    plans and places it (engine/importing/imports.py) and the hook words the finding (`message`)."""

    @property
    def rule(self) -> Rule:
        """The rule whose finding reports the insertion."""
        ...

    @property
    def module(self) -> str:
        """The module imported (`torch_npu`)."""
        ...

    @property
    def after(self) -> str:
        """The module whose first import it follows (`torch`)."""
        ...

    @property
    def entry_points(self) -> bool:
        """Every script with an `if __name__ == "__main__":` block that imports `after` needs it."""
        ...

    def needed_by(self, name: str) -> bool:
        """A use of qualified `name` needs the import by itself (torch.accelerator finds the NPU
        only once torch_npu is imported)."""
        ...

    def message(self, reason: ImportReason) -> str:
        """The finding's message for an insertion made for `reason`."""
        ...


class NodeHook(Protocol):
    """The generic hook: a rewrite of nodes of one class by a lookup key (engine/interface/hook_registry.py),
    for a node class the transformer has no callback of its own for."""

    def rewrite(self, site: Site, original: cst.CSTNode, updated: cst.CSTNode, key: str) -> cst.CSTNode:
        """The node rewritten (or `updated` as it is); `key` is the lookup key it was found by.
        A node of another class ends the hooks of the node."""
        ...


class CallHook(Protocol):
    """A rewrite of calls, keyed by the call's qualified name (or, as a heuristic, its short name).

    Several hooks on one call run in ascending `order`, then in compile order; each gets the call
    as the previous one left it. A hook keyed by the qualified name outranks hooks of the same
    class keyed by the short name.
    """

    order: ClassVar[int]

    def rewrite_call(
        self, site: Site, original: cst.Call, updated: cst.Call, name: str | None
    ) -> cst.BaseExpression:
        """The call rewritten (or `updated` as it is); `name` is the qualified name, if resolved.
        Another expression than a call ends the hooks of the call."""
        ...


class PatternHook(Protocol):
    """A rewrite of a computation written over several statements or functions (a hand-written
    RMSNorm), planned once per module on the original tree; the transformer replaces each planned
    node as it leaves it (engine/conversion/fused_patterns.py)."""

    def plan(self, site: Site, module: cst.Module) -> list[Planned]:
        """The nodes of `module` to replace, each with how to build its replacement."""
        ...


@dataclass(frozen=True)
class Planned:
    """One planned replacement: `build` makes it from the node as the transformer left it; the
    finding is reported on `node` (an original node) with `fields` when it is applied."""

    node: cst.CSTNode
    build: Callable[[cst.CSTNode], cst.CSTNode]
    rule: Rule
    fields: dict[str, Any]


class MethodHook(Protocol):
    """A rename of a method call by its name alone, `x.cuda()` (heuristic: the receiver's type is
    unknown). The engine calls it only when the call's qualified name matched no rule."""

    @property
    def rule(self) -> Rule:
        """The rule whose findings it reports."""
        ...

    @property
    def new(self) -> str | None:
        """The new name (None: report-only)."""
        ...

    def rewrite_method_call(self, site: Site, original: cst.Call, updated: cst.Call) -> cst.Call:
        """The call with the method renamed, or kept (and reported) where the file owns the name."""
        ...


class AttributeHook(Protocol):
    """A rename of an attribute read by its name alone, `x.is_cuda` (heuristic). The engine calls
    it only when the attribute chain's qualified name matched no rule."""

    @property
    def rule(self) -> Rule:
        """The rule whose findings it reports."""
        ...

    @property
    def new(self) -> str | None:
        """The new name (None: report-only)."""
        ...

    def rewrite_attribute(
        self, site: Site, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression | None:
        """The attribute renamed, `updated` kept as it is, or None: not this hook's (try the next)."""
        ...


class FunctionHook(MethodHook, AttributeHook, Protocol):
    """A rename of a function by its bare name where no import binds it (heuristic): calls
    `func()`, method-style calls `x.func()`, un-called uses `f = func`, `lib.func`."""

    def rewrite_name(self, site: Site, original: cst.Name, updated: cst.Name) -> cst.Name | None:
        """An un-called load of the bare name renamed, or None when the file binds the name."""
        ...

    def rewrite_function_call(self, site: Site, original: cst.Call, updated: cst.Call) -> cst.Call:
        """`func(...)` renamed, or kept (and reported once) where the file defines its own `func`."""
        ...


class StringHook(Protocol):
    """A rewrite of string literals that are code, not prose (the engine decides which are)."""

    @property
    def in_keys(self) -> bool:
        """Whether it also applies to dict keys and subscripts."""

    def rewrite_string(
        self, site: Site, original: cst.SimpleString, updated: cst.SimpleString, value: str
    ) -> cst.BaseExpression | None:
        """None when the literal does not match; else the result, which ends the search."""
        ...

    def rewrite_fstring(
        self, site: Site, original: cst.FormattedString, updated: cst.FormattedString, template: str
    ) -> cst.BaseExpression | None:
        """The same for an f-string, `template` being its text with `{}` for each expression."""
        ...

    def report_kept(
        self, site: Site, original: cst.SimpleString | cst.FormattedString, value: str, why: str
    ) -> bool:
        """A literal the engine keeps as the user's text (`why`): report it if it looks like a match."""
        ...


class EnvHook(Protocol):
    """A rewrite of an environment variable's name where the engine sees one used as such."""

    def rewrite_env_string(
        self, site: Site, original: cst.SimpleString, updated: cst.SimpleString, name: str
    ) -> cst.BaseExpression:
        """`os.environ["NAME"]` and the like: the literal holding the name."""
        ...

    def rewrite_env_keyword(self, site: Site, original: cst.Arg, updated: cst.Arg, name: str) -> cst.Arg:
        """`os.environ.update(NAME=...)`, `dict(os.environ, NAME=...)`: the keyword is the name."""
        ...

    def report_kept(self, site: Site, original: cst.SimpleString, name: str) -> None:
        """The name spelled where the engine sees no environment (`X = "NCCL_ALGO"`, a dict's key
        handed to the project's own helper): kept, and reported."""
        ...


class ResultUse(Enum):
    """How code uses the value a call returned (the engine finds the uses)."""

    UNPACK = "unpack"
    INDEX = "index"
    ITERATE = "iterate"
    COMPARE_EQUAL = "compare_equal"  # == or != only
    ORDER = "order"  # <, >=, in, ...
    ATTRIBUTE = "attribute"  # `.major` read: the node handed over is the Attribute


class ResultHook(Protocol):
    """Told about each use of the result of the call it is keyed by (qualified name)."""

    def result_used(self, site: Site, node: cst.CSTNode, name: str, use: ResultUse, through: str) -> None:
        """`through` is the variable the result was bound to, or '' for a direct use."""
        ...


@dataclass
class Claims:
    """What a value hook marks in a module before the traversal (original nodes)."""

    device_args: list[cst.Arg] = field(default_factory=list)  # their strings are devices, as `device=`'s
    devices: list[cst.CSTNode] = field(default_factory=list)  # string literals that are devices
    kept: list[cst.CSTNode] = field(default_factory=list)  # string literals no string hook may touch
    values: list[cst.Dict] = field(default_factory=list)  # handed to `rewrite_value` on the way up
    why: str = "a value hook keeps it"  # the evidence `explain` shows for the kept literals


class ValueHook(Protocol):
    """A rewrite of values that reach some calls' arguments, wherever the value is written.

    `claim` reads the whole module first (a dict bound to a name and passed on later is claimed
    where it is written); the engine then keeps the claimed literals from the string hooks and
    calls `rewrite_value` for each claimed node, after its children were rewritten.
    """

    def claim(self, site: Site, nodes: NodeIndex) -> Claims:
        """The nodes this hook takes charge of in the module `nodes` indexes."""
        ...

    def rewrite_value(self, site: Site, original: cst.Dict, updated: cst.Dict) -> cst.BaseExpression:
        """A claimed value, rewritten (or `updated` as it is)."""
        ...


class TextHook(Protocol):
    """A line scan of non-Python files that are copied as they are (and of the shell text a
    Python module writes: engine/conversion/embedded_scripts.py)."""

    @property
    def rule(self) -> Rule: ...

    @property
    def files(self) -> tuple[str, ...]:
        """Globs of the file names it reads (`applies_to` matches them)."""

    def matches_anywhere(self, text: str) -> bool:
        """Could some line of `text` be reported (a test of the whole text at once)?"""
        ...

    def applies_to(self, file_name: str) -> bool:
        """Does the scan read a file of this name (no folder)?"""
        ...

    def scan_line(self, number: int, line: str) -> Finding | None:
        """A finding for line `number` (1-based), or None."""
        ...


# the registry's slots (engine/interface/hook_registry.py): a node class and the interface of its hooks
QUALIFIED: Slot[NameHook] = Slot(cst.Attribute, "qualified")  # by a dotted prefix; "*": any top module
CALLS: Slot[CallHook] = Slot(cst.Call, "call")  # by qualified name, `module.*`, or `.short` name
METHODS: Slot[MethodHook] = Slot(cst.Call, "method")  # by the method's name
FUNCTIONS: Slot[FunctionHook] = Slot(cst.Name, "function")  # by the bare function name
ATTRIBUTES: Slot[AttributeHook] = Slot(cst.Attribute, "attribute")  # by the attribute's name
REFERENCES: Slot[AttributeHook] = Slot(cst.Attribute, "reference")  # reads not called; "*": any
STRINGS: Slot[StringHook] = Slot(cst.SimpleString, "string")  # "*", tried in order
ENV_NAMES: Slot[EnvHook] = Slot(cst.SimpleString, "env")  # by environment variable name
ENV_PREFIXES: Slot[EnvHook] = Slot(cst.SimpleString, "env_prefix")  # by a prefix of the name
RESULTS: Slot[ResultHook] = Slot(cst.Call, "result")  # calls whose result breaks when used
SUPPORT: Slot[SupportHook] = Slot(cst.Name, "support")  # "*": the release's lists, asked per use
VALUES: Slot[ValueHook] = Slot(cst.Dict, "value")  # "*": values reaching some calls' arguments
IMPORTS: Slot[ImportHook] = Slot(cst.Module, "import")  # "*": the import the rewrites need
FUSED: Slot[PatternHook] = Slot(cst.Module, "pattern")  # "*": computations over several statements
TEXT: Slot[TextHook] = Slot(cst.Module, "text")  # "*": line scans of copied files, a module's shell text


def node_slot(node: type[cst.CSTNode]) -> Slot[NodeHook]:
    """The slot of the generic hooks of a node class (engine/conversion/node_hooks.py runs them)."""
    return Slot(node, GENERIC)
