"""EnvVarRule: rename an environment variable where the code reads or writes it.

Matches the literal name in `os.environ[...]`, `os.environ.get/setdefault/pop(...)`, `os.getenv`,
`os.putenv`, `os.unsetenv` and `... in os.environ`. The same holds for environments built for
child processes: a name bound to `os.environ.copy()`, `dict(os.environ, ...)`,
`copy.copy(os.environ)` or `{**os.environ, ...}`, the keys of such a dict literal and of an
`env={...}` argument, and keyword names in `os.environ.update(NAME=...)` and
`dict(os.environ, NAME=...)`. `name` ending in `*` matches a prefix. With `new_name` null or
absent the variable is reported as UNSUPPORTED with the rule's `suggestion`. A literal that spells
a matching name anywhere else in code (a constant, a dict's key handed to the project's own
helper) is kept and reported, never renamed.

Code: `EnvRename.rewrite_env_string` / `rewrite_env_keyword`, an environment hook
(engine/interface/hooks.py) keyed by the name or prefix; the engine finds where a string or keyword is an
environment variable's name (engine/literals/environment.py).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import libcst as cst

from ms_fmk_transplt.engine.interface import ENV_NAMES, ENV_PREFIXES, Rule, Site, Tables
from ms_fmk_transplt.records import Operation
from ms_fmk_transplt.ruleset import checks
from ms_fmk_transplt.ruleset.registry import Entry, Problem, kind
from ms_fmk_transplt.ruleset.schema import spell


@kind(
    name="EnvVarRule",
    schema={
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "new_name": {"type": ["string", "null"]}},
    },
    message="environment variable {old} -> {new}",
)
class EnvVarRule:
    @staticmethod
    def check(entry: Entry) -> list[Problem]:
        name = entry["name"].rstrip("*")
        problems = []
        if not name or checks.identifier(name + ("X" if entry["name"].endswith("*") else "")):
            problems.append(
                ("name", f"{spell(entry['name'])} is not an environment variable name (letters, digits, _)")
            )
        new = entry.get("new_name")
        if new is not None and (entry["name"].endswith("*") or checks.identifier(new)):
            problems.append(
                ("new_name", "a prefix rule can only report; new_name must be a plain variable name")
            )
        return problems

    @staticmethod
    def summary(entry: Entry) -> str:
        new = entry.get("new_name")
        return (
            f"environment variable {entry['name']} -> {new}"
            if new
            else f"report environment variable {entry['name']}"
        )

    @staticmethod
    def key(entry: Entry) -> Hashable:
        return entry["name"]

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None:
        for rule in rules:
            name = rule.params["name"]
            new, suggestion = tables.opt_in(
                rule, rule.params.get("new_name"), rule.params.get("suggestion", "")
            )
            entry = EnvRename(rule, new, suggestion)
            if name.endswith("*"):
                tables.hooks.put(ENV_PREFIXES, name[:-1], entry)
            else:
                tables.hooks.put(ENV_NAMES, name, entry)
            tables.add_trigger(name.rstrip("*"))


@dataclass(frozen=True)
class EnvRename:
    """An environment variable's new name; `new=None` reports it instead."""

    rule: Rule
    new: str | None
    suggestion: str = ""

    def rewrite_env_string(
        self, site: Site, original: cst.SimpleString, updated: cst.SimpleString, name: str
    ) -> cst.BaseExpression:
        """The literal naming the variable, renamed (or reported)."""
        if self.new is None:
            site.report_unsupported(original, self.rule, f"environment variable {name}", self.suggestion)
            return updated
        site.report(original, self.rule, Operation.MODIFY, old=name, new=self.new)
        return updated.with_changes(value=f"{original.prefix}{original.quote}{self.new}{original.quote}")

    def report_kept(self, site: Site, original: cst.SimpleString, name: str) -> None:
        """The name where no environment is seen to take it: kept, with what to write if it is one."""
        what = f"write {self.new!r}" if self.new else f"it has no NPU counterpart: {self.suggestion}"
        site.report_kept(
            original,
            self.rule,
            f"{name!r} kept: not provably an environment variable's name here (no os.environ, getenv "
            f"or env= takes it); if it names one, {what}",
        )

    def rewrite_env_keyword(self, site: Site, original: cst.Arg, updated: cst.Arg, name: str) -> cst.Arg:
        """`NAME=...` in os.environ.update / dict(os.environ, ...), renamed (or reported)."""
        if self.new is None or not self.new.isidentifier():
            site.report_unsupported(original, self.rule, f"environment variable {name}", self.suggestion)
            return updated
        site.report(original, self.rule, Operation.MODIFY, old=name, new=self.new)
        keyword = updated.keyword
        assert keyword is not None
        return updated.with_changes(keyword=keyword.with_changes(value=self.new))
