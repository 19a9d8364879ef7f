"""What the rule kinds see of the engine: a rule entry (`Rule`), the hooks' protocols and the
`Site` they are handed, the one registry of hooks, and the `Tables` every kind compiles into."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.interface.hook_registry import ANY, HookRegistry, keys_of
    from ms_fmk_transplt.engine.interface.hook_runs import HookRuns, first_answer
    from ms_fmk_transplt.engine.interface.hooks import (
        ATTRIBUTES,
        CALLS,
        ENV_NAMES,
        ENV_PREFIXES,
        FUNCTIONS,
        FUSED,
        IMPORTS,
        METHODS,
        QUALIFIED,
        REFERENCES,
        RESULTS,
        STRINGS,
        SUPPORT,
        TEXT,
        VALUES,
        CallHook,
        Claims,
        Classified,
        EnvHook,
        ImportHook,
        ImportReason,
        Match,
        Planned,
        ResultHook,
        ResultUse,
        Site,
        StringHook,
        Tally,
        TextHook,
        ValueHook,
        node_slot,
    )
    from ms_fmk_transplt.engine.interface.rule import Example, Rule
    from ms_fmk_transplt.engine.interface.tables import Tables

__all__ = [
    "ANY",
    "ATTRIBUTES",
    "CALLS",
    "ENV_NAMES",
    "ENV_PREFIXES",
    "FUNCTIONS",
    "FUSED",
    "IMPORTS",
    "METHODS",
    "QUALIFIED",
    "REFERENCES",
    "RESULTS",
    "STRINGS",
    "SUPPORT",
    "TEXT",
    "VALUES",
    "CallHook",
    "Claims",
    "Classified",
    "EnvHook",
    "Example",
    "HookRegistry",
    "HookRuns",
    "ImportHook",
    "ImportReason",
    "Match",
    "Planned",
    "ResultHook",
    "ResultUse",
    "Rule",
    "Site",
    "StringHook",
    "Tables",
    "Tally",
    "TextHook",
    "ValueHook",
    "first_answer",
    "keys_of",
    "node_slot",
]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {
    "ANY": "hook_registry",
    "ATTRIBUTES": "hooks",
    "CALLS": "hooks",
    "CallHook": "hooks",
    "Claims": "hooks",
    "Classified": "hooks",
    "ENV_NAMES": "hooks",
    "ENV_PREFIXES": "hooks",
    "EnvHook": "hooks",
    "Example": "rule",
    "FUNCTIONS": "hooks",
    "FUSED": "hooks",
    "HookRegistry": "hook_registry",
    "HookRuns": "hook_runs",
    "IMPORTS": "hooks",
    "ImportHook": "hooks",
    "ImportReason": "hooks",
    "METHODS": "hooks",
    "Match": "hooks",
    "Planned": "hooks",
    "QUALIFIED": "hooks",
    "REFERENCES": "hooks",
    "RESULTS": "hooks",
    "ResultHook": "hooks",
    "ResultUse": "hooks",
    "Rule": "rule",
    "STRINGS": "hooks",
    "SUPPORT": "hooks",
    "Site": "hooks",
    "StringHook": "hooks",
    "TEXT": "hooks",
    "Tables": "tables",
    "Tally": "hooks",
    "TextHook": "hooks",
    "VALUES": "hooks",
    "ValueHook": "hooks",
    "first_answer": "hook_runs",
    "keys_of": "hook_registry",
    "node_slot": "hooks",
}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
