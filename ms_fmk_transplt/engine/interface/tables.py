"""Lookup tables the transformer consults; every rule kind compiles into these
(``ms_fmk_transplt.ruleset.compile``: the rules package fills them, the engine only reads them).

Two sorts of entry: the name tables below (`Rename`, `ModuleMembers`, `SupportEntry`), which the
engine's own name resolution applies, and `hooks`, the one registry of the entries the rule kinds
define themselves, by node class and lookup key (engine/hook_registry.py; engine/hooks.py is
their interface and names their slots). Built once per run, shared read-only by every file (and
pickled to worker processes).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from dataclasses import dataclass, field
from typing import Protocol

from ms_fmk_transplt.engine.devices import DeviceSpec
from ms_fmk_transplt.engine.interface.hook_registry import HookRegistry
from ms_fmk_transplt.engine.interface.hooks import (
    ATTRIBUTES,
    CALLS,
    FUNCTIONS,
    METHODS,
    REFERENCES,
    TEXT,
    CallHook,
    TextHook,
)
from ms_fmk_transplt.engine.interface.rule import Rule
from ms_fmk_transplt.engine.project import FirstParty, ProjectLayout
from ms_fmk_transplt.records import Finding, Support
from ms_fmk_transplt.suggest import closest


@dataclass(frozen=True)
class Rename:
    """A qualified name (or a method / attribute name) and what it becomes; `new=None` reports it."""

    rule: Rule
    new: str | None
    suggestion: str = ""


@dataclass(frozen=True)
class ModuleMembers:
    """A module whose listed members are renamed one by one; any other member is reported."""

    rule: Rule
    new_module: str
    suggestion: str = ""
    itself: str | None = None  # what a reference to the module itself becomes (default new_module)
    # the old module's own names in the pinned torch, and its version: a member outside them is
    # a misspelling or another torch's API, said so (with the nearest name), not "the NPU lacks it"
    known: frozenset[str] = frozenset()
    torch: str = ""

    def missing(self, module: str, member: str) -> str | None:
        """The suggestion for a member the old module does not have, or None when it has it."""
        if not self.known or member in self.known:
            return None
        near = closest(member, (n for n in self.known if not n.startswith("_")), cutoff=0.8)
        hint = f": did you mean {module}.{near}?" if near else ""
        return f"{module} of torch {self.torch} has no {member}{hint}"


@dataclass(frozen=True)
class SupportEntry:
    """How the selected release supports one API, and which rule's list said so."""

    rule: Rule
    support: Support
    dtypes: str = ""


@dataclass(frozen=True)
class Match:
    """The result of looking a qualified name up: `prefix` of `name` matched an entry."""

    rule: Rule
    name: str
    prefix: str
    new: str | None  # the replacement for `prefix`, None when unsupported
    suggestion: str = ""


@dataclass
class SupportLists:
    """The release's support data, as the support classifier reads it (engine/support.py)."""

    apis: dict[str, SupportEntry] = field(default_factory=dict)  # qualified name -> entry
    tensor_methods: dict[str, SupportEntry] = field(default_factory=dict)  # method name -> entry (heuristic)
    rule: Rule | None = None  # the rule that reports names absent from every list
    npu_members: frozenset[str] = frozenset()  # torch.npu's public names in the release
    aten_ops: frozenset[str] = frozenset()  # ATen operators with an NPU kernel in the release
    advice: dict[str, str] = field(default_factory=dict)  # API name or dotted prefix -> advice


class Advisor(Protocol):
    """Performance advice on one file (ms_fmk_transplt/advice/, asked only with --advice)."""

    def advise(self, data: bytes) -> tuple[Finding, ...]:
        """ADVICE findings at the original positions of `data`, a Python source; never raises."""
        ...


@dataclass
class Tables:
    """Everything the transformer needs, keyed for dictionary lookups."""

    renames: dict[str, Rename] = field(default_factory=dict)
    modules: dict[str, ModuleMembers] = field(default_factory=dict)
    # top-level modules named by a glob (`*_cuda`: compiled CUDA extensions), tried after the
    # names above; `module_glob` is all their patterns in one regex, None when there are none
    module_globs: dict[str, Rename] = field(default_factory=dict)
    module_glob: re.Pattern[str] | None = None
    # the kinds' hooks by node class and lookup key (engine/hook_registry.py), each a class of the
    # kind that compiled it (ruleset/kinds/<kind>.py): calls by qualified name or `.short` name
    hooks: HookRegistry = field(default_factory=HookRegistry)
    # a file naming one may keep alternatives of a device dispatch as written (engine/dispatch_sites.py):
    # libcst's path decides, the fast path's classification would report inside them
    dispatch_words: set[str] = field(default_factory=set)
    device_spec: DeviceSpec = field(default_factory=DeviceSpec)  # where a string literal is a device
    opt_ins: frozenset[str] = frozenset()
    import_insert: Rule | None = None
    needs_module: set[str] = field(default_factory=set)  # using these needs the inserted import
    triggers: set[tuple[str, ...]] = field(default_factory=set)
    # the fast path (engine/fast_path.py): words of the rules it cannot see by name, and names
    # (dotted: any use under the name; single: the identifier) whose use sends a file to libcst
    text_triggers: set[tuple[str, ...]] = field(default_factory=set)
    trigger_names: set[str] = field(default_factory=set)
    # calls (qualified, or short for an undotted name) whose string arguments spell API paths that
    # a rule acts on only where a rename covers them (`mock.patch("torch.cuda.x")`)
    path_string_calls: set[str] = field(default_factory=set)
    support: SupportLists = field(default_factory=lambda: SupportLists())  # filled by ApiSupportRule
    release: str = ""
    target: str = "npu"  # what converted code runs on: npu, or accelerator (device-agnostic torch)
    # the run's input tree (engine/first_party.py), and one file's view of it (`for_file`)
    project: ProjectLayout | None = None
    first_party: FirstParty | None = None
    advisor: Advisor | None = None  # --advice: performance advice beside the conversion

    def for_file(self, path: str) -> Tables:
        """These tables as the file at `path` sees them: its imports of the project's own modules
        are no library's (`lookup` finds no rule for them)."""
        if self.project is None:
            return self
        return dataclasses.replace(self, first_party=self.project.seen_from(path))

    def owned(self, name: str) -> bool:
        """`name` is the project's own (a file's view only: `for_file`), so no library rule applies."""
        return self.first_party is not None and self.first_party.owns(name)

    def lookup(self, name: str) -> Match | None:
        """The longest prefix of dotted `name` that a rule covers, with its replacement; None for
        a name of the project's own modules (engine/first_party.py), whatever rule names it."""
        if self.owned(name):
            return None
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            rest = parts[end:]
            entry = self.renames.get(prefix)
            members = self.modules.get(prefix)
            # a module that one rule renames whole (`torch.cuda.amp` as a member of torch.cuda)
            # and another moves member by member: a member goes by the second, which knows them
            if entry is not None and not (rest and members is not None):
                return Match(entry.rule, name, prefix, entry.new, entry.suggestion)
            if members is not None:
                if not rest:
                    return Match(members.rule, name, prefix, members.itself or members.new_module)
                member = f"{prefix}.{rest[0]}"
                missing = members.missing(prefix, rest[0])
                return Match(members.rule, name, member, None, missing or members.suggestion)
        if self.module_glob is not None and self.module_glob.fullmatch(parts[0]):
            return self._glob_match(name, parts[0])
        return None

    def _glob_match(self, name: str, module: str) -> Match | None:
        """The match of a top-level module that one of `module_globs` names."""
        for glob, entry in self.module_globs.items():
            if fnmatch.fnmatchcase(module, glob):
                return Match(entry.rule, name, module, entry.new, entry.suggestion)
        return None

    def add_module_glob(self, glob: str, entry: Rename) -> None:
        """Report every use of a top-level module whose name matches `glob` (`*_cuda`)."""
        self.module_globs[glob] = entry
        self.module_glob = re.compile("|".join(fnmatch.translate(g) for g in self.module_globs))
        self.add_trigger(glob.replace("*", ""))  # a file using one spells the rest of the glob

    def rename(self, rule: Rule, new: str | None, suggestion: str = "") -> Rename:
        """A Rename, or a report-only one when the rule is opt-in and not opted into."""
        opt_in = rule.params.get("opt_in")
        if new is not None and opt_in and opt_in not in self.opt_ins:
            hint = f"rerun with --opt-in {opt_in} to rewrite it as {new}"
            return Rename(rule, None, f"{suggestion}; {hint}" if suggestion else hint)
        return Rename(rule, new, suggestion)

    def add_trigger(self, *names: str, classify_only: bool = False) -> None:
        """Record what a file must contain for a rule to match in it.

        Any use of a dotted name `a.b.c` spells out its last two segments somewhere in the file,
        whatever the import form (`import a.b as m; m.c`, `from a.b import c`, `a.b.c`), so the
        pair ("b", "c") is a necessary condition; a single word is its own condition.
        A file holding these words is converted by libcst; `classify_only`: the rule only
        classifies API uses, which CPython's ast does as well (engine/fast_path.py).
        """
        for name in names:
            trigger = tuple(name.split(".")[-2:])
            self.triggers.add(trigger)
            if not classify_only:
                self.text_triggers.add(trigger)

    def add_name_trigger(self, *names: str) -> None:
        """As `add_trigger`, for a rule that acts only where the code uses one of these names: a
        qualified name or one under it (`torch.cuda` covers `torch.cuda.synchronize`), a single
        identifier wherever it is spelled (`x.cuda`, `cuda(...)`). The fast path reads the names
        (engine/fast_path.py) and gives a file that uses one to libcst."""
        for name in names:
            self.triggers.add(tuple(name.split(".")[-2:]))
            self.trigger_names.add(name)

    def add_call_hook(self, name: str, hook: CallHook, by_short_name: bool = False) -> None:
        """Register a call hook; the hooks on one name stay in ascending `order`, then compile order."""
        self.hooks.add(CALLS, f".{name}" if by_short_name else name, hook)

    def by_short_name(self) -> tuple[bool, bool, bool]:
        """Does the run match functions, methods, attributes by their short name (heuristics)?"""
        return (
            bool(self.hooks.keyed(FUNCTIONS)),
            bool(self.hooks.keyed(METHODS)) or any(key[0] == "." for key in self.hooks.keyed(CALLS)),
            bool(self.hooks.keyed(ATTRIBUTES) or self.hooks.keyed(REFERENCES)),
        )

    def call_hooks_for(self, name: str) -> list[CallHook] | None:
        """The call hooks of a qualified name: its own, else those of `module.*` (a direct member)."""
        hooks = self.hooks.at(CALLS, name)
        if hooks is None and "." in name:
            hooks = self.hooks.at(CALLS, name.rsplit(".", 1)[0] + ".*")
        return hooks

    def text_globs(self) -> tuple[str, ...]:
        """Every file-name glob a text scan reads: a copied file matching none is never read."""
        return tuple(dict.fromkeys(glob for hook in self.hooks.all(TEXT) for glob in hook.files))

    def text_hooks_for(self, path: str) -> list[TextHook]:
        """The text scans that read this file, judged by its name."""
        name = path.rsplit("/", 1)[-1]
        return [hook for hook in self.hooks.all(TEXT) if hook.applies_to(name)]

    def could_match(self, data: bytes) -> bool:
        """False only when no rule can possibly match in `data` (proved by test to change nothing)."""
        return any(all(word.encode() in data for word in trigger) for trigger in self.triggers)

    def could_rewrite(self, data: bytes) -> bool:
        """False when no rule that matches text can match in `data`: the rules left act by name,
        and engine/fast_path.py sees their names (proved by test to give libcst's result)."""
        return any(all(word.encode() in data for word in trigger) for trigger in self.text_triggers)
