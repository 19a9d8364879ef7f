"""Rule kinds register themselves here; every module under `kinds/` is imported once."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ms_fmk_transplt.ruleset import kinds as _kinds_pkg


@dataclass(frozen=True)
class Kind:
    """How a kind of rule is validated and compiled for the engine.

    `schema` is the JSON schema of one entry's own keys; `check` returns semantic problems as
    (key, message) pairs; `compile` adds the kind's rules to the engine's tables.
    """

    name: str
    schema: dict[str, Any]
    check: Callable[[dict[str, Any]], list[tuple[str, str]]]
    compile: Callable[[list[Any], Any], None]
    summary: Callable[[dict[str, Any]], str]
    message: str
    key: Callable[[dict[str, Any]], Any]  # two entries with the same key are duplicates
    heuristic: bool = False


_KINDS: dict[str, Kind] = {}


def kind(**attrs: Any) -> Callable[[Any], Any]:
    """Class decorator: register a rule kind named after its module."""

    def register(cls: Any) -> Any:
        module = cls.__module__.rsplit(".", 1)[-1]
        name = attrs.pop("name")
        if module.replace("_", "") != name.lower():
            raise RuntimeError(f"rule kind {name} must live in a module named after it, not {module}")
        _KINDS[name] = Kind(
            name=name,
            schema=attrs.get("schema", {}),
            check=getattr(cls, "check", lambda entry: []),
            compile=cls.compile,
            summary=cls.summary,
            message=attrs["message"],
            key=cls.key,
            heuristic=attrs.get("heuristic", False),
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
