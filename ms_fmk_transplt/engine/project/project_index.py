"""The project's modules' facts joined across modules (engine/project/project_devices.py reads each alone).

- **Where a name lives**: `locate` follows a spelling (`pkg.pick`, `.helpers:pick`, `path::pick`)
  to the module that defines the name, through the names a module re-exports
  (`pkg/__init__.py`: `from .helpers import pick`, `from .helpers import *`, with `__all__` or
  without: then its public names).
- **What importers do with a module's values**: `returned` hands each module, per function
  (`pick()`) or constant (`ACCEL`), every use its importers make of the value
  (engine/project/project_results.py), each with the importer's path: a literal `pick` returns is a
  device when one of them hands the result to a device API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from ms_fmk_transplt.engine.project.project_devices import ModuleFacts
from ms_fmk_transplt.engine.project.project_results import CALLED, OTHER, forwarded
from ms_fmk_transplt.engine.project.project_walk import (
    OWN,
    Use,
    join,
    module_paths,
    relative_files,
    resolve_relative,
)

_DEPTH = 4  # re-exports of re-exports: how far they are followed
Returned = Mapping[str, tuple[tuple[str, Use], ...]]  # `pick()` / `ACCEL` -> (importer, use)


class View(Protocol):
    """One module's view of the project (engine/project/first_party.py's `FirstParty`)."""

    roots: tuple[str, ...]

    def module_of(self, name: str) -> tuple[str, str] | None: ...


class ProjectIndex:
    """Where the names the project's modules spell live, and what importers do with each module's values."""

    def __init__(
        self, files: frozenset[str], facts: Mapping[str, ModuleFacts], view: Callable[[str], View]
    ) -> None:
        self.files = files
        self.facts = facts
        self._view_of = view
        self._views: dict[str, View] = {}
        self._exports: dict[str, dict[str, str]] = {}
        self._returned: dict[str, dict[str, list[tuple[str, Use]]]] | None = None
        self._flat: dict[tuple[str, str], tuple[tuple[str, Use], ...]] = {}  # (path, `pick()`) -> its uses

    def view(self, path: str) -> View:
        found = self._views.get(path)
        if found is None:
            found = self._views[path] = self._view_of(path)
        return found

    def locate(self, spelled: str, origin: str, depth: int = _DEPTH) -> tuple[str, str] | None:
        """(module path, member) of the project a name spelled in the module at `origin` reaches:
        qualified (`pkg.helpers.move`), relative (`..utils:move`) or its own (`path::move`)."""
        if spelled.startswith("."):
            spelled = resolve_relative(self.files, origin, spelled) or ""
        path, own, member = spelled.partition(OWN)
        if not own:
            found = self.view(origin).module_of(spelled) if spelled else None
            if found is None:
                return None
            path, member = found
        return self._follow(path, member, depth)

    def _follow(self, path: str, member: str, depth: int) -> tuple[str, str]:
        """Through the module's re-exports, to where `member` is defined."""
        facts = self.facts.get(path)
        head, dot, rest = member.partition(".")
        if facts is None or depth <= 0 or head in facts.signatures:
            return path, member
        exports = self._exports.get(path)
        if exports is None:
            exports = self._exports[path] = dict(facts.exports)
        spelled = exports.get(head)
        if spelled is not None:
            found = self.locate(spelled, path, depth - 1)
            return (found[0], found[1] + dot + rest) if found is not None else (path, member)
        if head in facts.defined:
            return path, member
        for star in facts.stars:
            for module in self._star_files(path, star):
                source = self.facts.get(module)
                if source is not None and _public(source, head):
                    return self._follow(module, member, depth - 1)
        return path, member

    def made_by(self, path: str, member: str, depth: int = _DEPTH) -> tuple[str, str]:
        """The class whose instance the module's function `member` returns (`def make_runner():
        return Runner(...)`, a factory's factory too); `(path, member)` itself for anything else."""
        facts = self.facts.get(path)
        spelled = dict(facts.makes).get(member) if facts is not None and depth > 0 else None
        found = self.locate(spelled, path) if spelled is not None else None
        return (path, member) if found is None else self.made_by(*found, depth - 1)

    def inherited(self, path: str, member: str, depth: int = _DEPTH) -> Iterator[tuple[str, str]]:
        """Where a class's member it does not define is, nearest base first: `Fast.move` ->
        (its base's module, `Runner.move`); `Fast`, a class without `__init__` -> `Runner`."""
        cls, dot, attribute = member.partition(".")
        facts = self.facts.get(path)
        entry = next((e for e in facts.bases if e[0] == cls), None) if facts is not None else None
        if entry is None or depth <= 0 or (attribute or "__init__") in entry[2]:
            return
        for base in entry[1]:
            found = self.locate(base, path)
            if found is not None and "." not in found[1]:
                yield found[0], found[1] + dot + attribute
                yield from self.inherited(found[0], found[1] + dot + attribute, depth - 1)

    def _star_files(self, path: str, star: str) -> list[str]:
        if star.startswith("."):
            return relative_files(self.files, path, star)
        base = star.replace(".", "/")
        return [
            p for root in self.view(path).roots for p in module_paths(join(root, base)) if p in self.files
        ]

    def returned(self, path: str) -> Returned:
        """What the project's modules do with the values of the module at `path`'s functions and
        constants, by `pick()` / `ACCEL`; a value another function returns (`def outer(): return
        pick()`) is followed to what outer's callers do with it."""
        if self._returned is None:
            self._returned = {}
            for importer, facts in self.facts.items():
                for spelled, uses in facts.results:
                    called = spelled.endswith(CALLED)
                    found = self.locate(spelled[: -len(CALLED)] if called else spelled, importer)
                    if found is None or "." in found[1]:
                        continue  # not the project's, or a class's member
                    entries = self._returned.setdefault(found[0], {})
                    key = found[1] + (CALLED if called else "")
                    entries.setdefault(key, []).extend((importer, use) for use in uses)
        return {key: self._uses(path, key) for key in self._returned.get(path, {})}

    def _uses(self, path: str, key: str) -> tuple[tuple[str, Use], ...]:
        """The uses of `key` of the module at `path`, and of every function's result it is handed
        back by, however far (`def outer(): return pick()`); a function whose result nobody uses
        stands for `OTHER` (nothing known). Followed as a graph: circles end, the answer is the
        same whichever module asks first."""
        done = self._flat.get((path, key))
        if done is not None:
            return done
        raw = self._returned or {}
        found: set[tuple[str, Use]] = set()
        seen = {(path, key)}
        stack = [(path, key)]
        while stack:
            module, name = stack.pop()
            for importer, use in raw.get(module, {}).get(name, ()):
                outer = forwarded(use)
                if outer is None:
                    found.add((importer, use))
                elif outer + CALLED not in raw.get(importer, {}):
                    found.add((importer, OTHER))  # handed back by a function whose result nobody uses
                elif (importer, outer + CALLED) not in seen:
                    seen.add((importer, outer + CALLED))
                    stack.append((importer, outer + CALLED))
        uses = self._flat[(path, key)] = tuple(sorted(found, key=repr))
        return uses


def _public(facts: ModuleFacts, name: str) -> bool:
    """Does `from module import *` bind `name`?"""
    if facts.public is not None:
        return name in facts.public
    return not name.startswith("_") and (name in facts.defined or any(n == name for n, _ in facts.exports))
