"""Rules -> the engine's lookup tables: each kind compiles its rules into `Tables`."""

from __future__ import annotations

from collections.abc import Iterable

from ms_fmk_transplt import data
from ms_fmk_transplt.engine.interface import Rule, Tables
from ms_fmk_transplt.ruleset.registry import all_kinds


def compile_rules(
    rules: Iterable[Rule], release: str = "", opt_ins: Iterable[str] = (), target: str = "npu"
) -> Tables:
    """Build the lookup tables from validated rules; later rules override earlier ones.

    A rule with an `opt_in` name that is not in `opt_ins` is compiled as a report only.
    """
    kinds = all_kinds()
    tables = Tables(release=release or data.default_release(), opt_ins=frozenset(opt_ins), target=target)
    by_kind: dict[str, list[Rule]] = {}
    for rule in rules:
        by_kind.setdefault(rule.kind, []).append(rule)
    # report-only data lists go last so that any explicit rule for the same name wins
    for name in sorted(by_kind, key=lambda kind: kind == "ApiSupportRule"):
        kinds[name].compile(by_kind[name], tables)
    return tables
