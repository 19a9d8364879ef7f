"""Rule files: loading, validation and the rule kinds that compile them for the engine.

The names below load on first use: unpickling cached rule tables imports the kinds' modules
(their hook classes), and that must not import the loader (jsonschema costs ~40 ms of start-up).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.interface import Example, Rule
    from ms_fmk_transplt.ruleset.compile import compile_rules
    from ms_fmk_transplt.ruleset.loader import RuleFileError, load_builtin_rules, load_rule_file, load_rules

_HOMES = {
    "Example": "ms_fmk_transplt.engine.interface",
    "Rule": "ms_fmk_transplt.engine.interface",
    "compile_rules": "ms_fmk_transplt.ruleset.compile",
    "RuleFileError": "ms_fmk_transplt.ruleset.loader",
    "load_builtin_rules": "ms_fmk_transplt.ruleset.loader",
    "load_rule_file": "ms_fmk_transplt.ruleset.loader",
    "load_rules": "ms_fmk_transplt.ruleset.loader",
}

__all__ = [
    "Example",
    "Rule",
    "RuleFileError",
    "compile_rules",
    "load_builtin_rules",
    "load_rule_file",
    "load_rules",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value
