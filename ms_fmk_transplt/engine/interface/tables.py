"""Lookup tables the transformer consults; every rule kind compiles into these
(``ms_fmk_transplt.ruleset.compile``: the rules package fills them, the engine only reads them).

Two sorts of entry: `hooks`, the one registry of the entries the rule kinds define themselves, by
node class and lookup key (engine/interface/hook_registry.py; engine/interface/hooks.py is their interface and names
their slots), and the name tables of the run (triggers, the release, the target, the project).
Built once per run, shared read-only by every file (and pickled to worker processes).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Protocol

from ms_fmk_transplt.engine.devices import DeviceSpec
from ms_fmk_transplt.engine.interface.hook_registry import ANY, HookRegistry
from ms_fmk_transplt.engine.interface.hooks import (
    ATTRIBUTES,
    CALLS,
    FUNCTIONS,
    METHODS,
    QUALIFIED,
    REFERENCES,
    TEXT,
    CallHook,
    Match,
    TextHook,
)
from ms_fmk_transplt.engine.interface.rule import Rule
from ms_fmk_transplt.engine.project import FirstParty, ProjectLayout
from ms_fmk_transplt.records import Finding


class Advisor(Protocol):
    """Performance advice on one file (ms_fmk_transplt/advice/, asked only with --advice)."""

    def advise(self, data: bytes) -> tuple[Finding, ...]:
        """ADVICE findings at the original positions of `data`, a Python source; never raises."""
        ...


@dataclass
class Tables:
    """Everything the transformer needs, keyed for dictionary lookups."""

    # the kinds' hooks by node class and lookup key (engine/interface/hook_registry.py), each a class of the
    # kind that compiled it (ruleset/kinds/<kind>.py): qualified names by their covered prefix,
    # calls by qualified name or `.short` name, ...
    hooks: HookRegistry = field(default_factory=HookRegistry)
    # a file naming one may keep alternatives of a device dispatch as written (engine/devices/dispatch_sites.py):
    # libcst's path decides, the fast path's classification would report inside them
    dispatch_words: set[str] = field(default_factory=set)
    device_spec: DeviceSpec = field(default_factory=DeviceSpec)  # where a string literal is a device
    opt_ins: frozenset[str] = frozenset()
    triggers: set[tuple[str, ...]] = field(default_factory=set)
    # the fast path (engine/conversion/fast_path.py): words of the rules it cannot see by name, and names
    # (dotted: any use under the name; single: the identifier) whose use sends a file to libcst
    text_triggers: set[tuple[str, ...]] = field(default_factory=set)
    trigger_names: set[str] = field(default_factory=set)
    # calls (qualified, or short for an undotted name) whose string arguments spell API paths that
    # a rule acts on only where a rename covers them (`mock.patch("torch.cuda.x")`)
    path_string_calls: set[str] = field(default_factory=set)
    release: str = ""
    target: str = "npu"  # what converted code runs on: npu, or accelerator (device-agnostic torch)
    # the run's input tree (engine/project/first_party.py), and one file's view of it (`for_file`)
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
        """What the name hooks of the longest prefix of dotted `name` that one covers make of it;
        None for a name of the project's own modules (engine/project/first_party.py), whatever rule names
        it. A top-level module none covers is asked of the hooks under "*" (globs: `*_cuda`)."""
        if self.owned(name):
            return None
        keyed = self.hooks.keyed(QUALIFIED)
        if not keyed:
            return None
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            hooks = keyed.get(prefix)
            if hooks:
                rest = parts[end:]
                if len(hooks) > 1:  # on a member, the hooks that know members first; else last
                    hooks = sorted(hooks, key=lambda hook: hook.members != bool(rest))
                for hook in hooks:
                    match = hook.resolve(name, prefix, rest)
                    if match is not None:
                        return match
        for hook in keyed.get(ANY, ()):
            match = hook.resolve(name, parts[0], parts[1:])
            if match is not None:
                return match
        return None

    def member_modules(self) -> frozenset[str]:
        """The modules whose members a name hook knows one by one (a file's `cuda = torch.cuda`
        then aliases one, though the file imports no such module)."""
        return self.hooks.derived(
            "member_modules",
            lambda: frozenset(
                key for key, hooks in self.hooks.keyed(QUALIFIED).items() if any(h.members for h in hooks)
            ),
        )

    def opt_in(self, rule: Rule, new: str | None, suggestion: str = "") -> tuple[str | None, str]:
        """(new, suggestion) of a rewrite, or of a report only when the rule is opt-in and not
        opted into."""
        opt_in = rule.params.get("opt_in")
        if new is not None and opt_in and opt_in not in self.opt_ins:
            hint = f"rerun with --opt-in {opt_in} to rewrite it as {new}"
            return None, f"{suggestion}; {hint}" if suggestion else hint
        return new, suggestion

    def add_trigger(self, *names: str, classify_only: bool = False) -> None:
        """Record what a file must contain for a rule to match in it.

        Any use of a dotted name `a.b.c` spells out its last two segments somewhere in the file,
        whatever the import form (`import a.b as m; m.c`, `from a.b import c`, `a.b.c`), so the
        pair ("b", "c") is a necessary condition; a single word is its own condition.
        A file holding these words is converted by libcst; `classify_only`: the rule only
        classifies API uses, which CPython's ast does as well (engine/conversion/fast_path.py).
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
        (engine/conversion/fast_path.py) and gives a file that uses one to libcst."""
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
        and engine/conversion/fast_path.py sees their names (proved by test to give libcst's result)."""
        return any(all(word.encode() in data for word in trigger) for trigger in self.text_triggers)
