"""Rule files: loading, validation and the rule kinds that compile them for the engine."""

from ms_fmk_transplt.engine.rule import Example, Rule
from ms_fmk_transplt.ruleset.compile import compile_rules
from ms_fmk_transplt.ruleset.loader import RuleFileError, load_builtin_rules, load_rule_file, load_rules

__all__ = [
    "Example",
    "Rule",
    "RuleFileError",
    "compile_rules",
    "load_builtin_rules",
    "load_rule_file",
    "load_rules",
]
