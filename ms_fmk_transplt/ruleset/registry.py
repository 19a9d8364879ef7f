"""Rule kinds register themselves here; every module under `kinds/` is imported once."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ms_fmk_transplt.engine.interface import Rule, Tables
from ms_fmk_transplt.ruleset import kinds as _kinds_pkg

Entry = dict[str, Any]  # one entry of a rule file, as validated against the kind's schema
Problem = tuple[str, str]  # (key of the entry, what is wrong with it)


class RuleKind(Protocol):
    """What a rule kind's class provides (static methods; `@kind` registers the class).

    `check` returns the entry's semantic problems (its schema is checked before), `summary` the
    one-line description of an entry, `key` what makes two entries duplicates, and `compile` adds
    the kind's validated rules to the engine's tables.
    """

    @staticmethod
    def check(entry: Entry) -> list[Problem]: ...

    @staticmethod
    def summary(entry: Entry) -> str: ...

    @staticmethod
    def key(entry: Entry) -> Hashable: ...

    @staticmethod
    def compile(rules: list[Rule], tables: Tables) -> None: ...


K = TypeVar("K", bound=RuleKind)


@dataclass(frozen=True)
class Kind:
    """How a kind of rule is validated and compiled for the engine.

    `schema` is the JSON schema of one entry's own keys; `check` returns semantic problems as
    (key, message) pairs; `compile` adds the kind's rules to the engine's tables.
    """

    name: str
    schema: dict[str, Any]
    check: Callable[[Entry], list[Problem]]
    compile: Callable[[list[Rule], Tables], None]
    summary: Callable[[Entry], str]
    message: str
    key: Callable[[Entry], Hashable]  # two entries with the same key are duplicates
    heuristic: bool = False
    # its findings are the support lists' verdict on an API: a finding of any other rule on the
    # same API at the same line outranks it (engine/conversion/convert.py keeps one finding per call site)
    support_list: bool = False


_KINDS: dict[str, Kind] = {}


def kind(**attrs: Any) -> Callable[[type[K]], type[K]]:
    """Class decorator: register a rule kind named after its module."""

    def register(cls: type[K]) -> type[K]:
        module = cls.__module__.rsplit(".", 1)[-1]
        name = attrs.pop("name")
        if module.replace("_", "") != name.lower():
            raise RuntimeError(f"rule kind {name} must live in a module named after it, not {module}")
        _KINDS[name] = Kind(
            name=name,
            schema=attrs.get("schema", {}),
            check=cls.check,
            compile=cls.compile,
            summary=cls.summary,
            message=attrs["message"],
            key=cls.key,
            heuristic=attrs.get("heuristic", False),
            support_list=attrs.get("support_list", False),
        )
        return cls

    return register


_ALL_IMPORTED: list[bool] = []


def all_kinds() -> dict[str, Kind]:
    """Every registered kind, importing the kind modules on first use."""
    # not `if not _KINDS`: unpickling cached rule tables imports the kind modules of their hooks
    # alone, and a registry holding only those would then reject every other kind
    if not _ALL_IMPORTED:
        for info in pkgutil.iter_modules(_kinds_pkg.__path__):
            importlib.import_module(f"{_kinds_pkg.__name__}.{info.name}")
        _ALL_IMPORTED.append(True)
    return _KINDS
