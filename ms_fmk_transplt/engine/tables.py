"""Lookup tables the transformer consults; every rule kind compiles into these.

Built once per run, shared read-only by every file (and pickled to worker processes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ms_fmk_transplt.rules.model import Rule


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


@dataclass(frozen=True)
class ArgRewrite:
    """Replace one argument of a call: positional `index` and/or keyword `keyword`."""

    rule: Rule
    index: int | None
    keyword: str | None
    new_code: str


@dataclass(frozen=True)
class Match:
    """The result of looking a qualified name up: `prefix` of `name` matched an entry."""

    rule: Rule
    name: str
    prefix: str
    new: str | None  # the replacement for `prefix`, None when unsupported
    suggestion: str = ""


@dataclass
class Tables:
    """Everything the transformer needs, keyed for dictionary lookups."""

    renames: dict[str, Rename] = field(default_factory=dict)
    modules: dict[str, ModuleMembers] = field(default_factory=dict)
    methods: dict[str, Rename] = field(default_factory=dict)  # heuristic: x.cuda(...)
    functions: dict[str, Rename] = field(default_factory=dict)  # heuristic: func(...), unimported
    attributes: dict[str, Rename] = field(default_factory=dict)  # heuristic: x.is_cuda
    args_by_name: dict[str, list[ArgRewrite]] = field(default_factory=dict)
    args_by_method: dict[str, list[ArgRewrite]] = field(default_factory=dict)
    handlers: list[tuple[Rule, Any]] = field(default_factory=list)
    import_insert: Rule | None = None
    triggers: set[str] = field(default_factory=set)
    release: str = ""

    def lookup(self, name: str) -> Match | None:
        """The longest prefix of dotted `name` that a rule covers, with its replacement."""
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            rest = parts[end:]
            entry = self.renames.get(prefix)
            if entry is not None:
                return Match(entry.rule, name, prefix, entry.new, entry.suggestion)
            members = self.modules.get(prefix)
            if members is not None:
                if not rest:
                    return Match(members.rule, name, prefix, members.new_module)
                member = f"{prefix}.{rest[0]}"
                return Match(members.rule, name, member, None, members.suggestion)
        return None

    def add_trigger(self, *names: str) -> None:
        """Words whose absence from a file proves that no rule can match in it."""
        for name in names:
            self.triggers.add(name.rsplit(".", 1)[-1])


def compile_rules(rules: Iterable[Rule], release: str = "") -> Tables:
    """Build the lookup tables from validated rules; later rules override earlier ones."""
    from ms_fmk_transplt.rules.registry import all_kinds

    from ms_fmk_transplt import data

    kinds = all_kinds()
    tables = Tables(release=release or data.default_release())
    by_kind: dict[str, list[Rule]] = {}
    for rule in rules:
        by_kind.setdefault(rule.kind, []).append(rule)
    for name, group in by_kind.items():
        kinds[name].compile(group, tables)
    return tables
