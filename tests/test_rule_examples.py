"""Every built-in rule's embedded examples run: `before` converts to `after`, and is then stable."""

from __future__ import annotations

import pytest
from helpers import convert_text

from ms_fmk_transplt.engine.conversion import scan_text
from ms_fmk_transplt.ruleset import compile_rules, load_rules
from ms_fmk_transplt.ruleset.loader import load_builtin_rules


def _tables(example, builtin_tables, target: str = "npu"):
    if example.release or example.opt_in or target != "npu":
        return compile_rules(
            load_rules(target=target),
            release=example.release or "",
            opt_ins=[example.opt_in] if example.opt_in else [],
            target=target,
        )
    return builtin_tables


RULES = load_builtin_rules(target=None)  # every --target's, each example converted for its own
EXAMPLES = [(rule.id, i, ex, rule.target) for rule in RULES for i, ex in enumerate(rule.examples)]


@pytest.mark.parametrize(
    "rule_id,index,example,target", EXAMPLES, ids=[f"{r}-{i}" for r, i, _, _ in EXAMPLES]
)
def test_example(rule_id, index, example, target, builtin_tables) -> None:
    tables = _tables(example, builtin_tables, target)
    if example.file:  # a launch script or config: reported, never rewritten
        assert example.after == example.before
        return
    converted, result = convert_text(example.before, tables)
    assert converted == example.after
    if example.after != example.before:
        assert any(f.rule_id == rule_id for f in result.findings), f"{rule_id} did not fire"
    assert convert_text(converted, tables)[0] == converted


def test_every_builtin_rule_fires_on_one_of_its_examples(builtin_tables) -> None:
    for rule in RULES:
        assert rule.examples, f"{rule.id} has no examples"
        fired = [
            f
            for e in rule.examples
            for f in (
                scan_text(e.file, e.before.encode(), builtin_tables)
                if e.file
                else convert_text(e.before, _tables(e, builtin_tables, rule.target))[1].findings
            )
            if f.rule_id == rule.id
        ]
        assert fired, f"{rule.id} reports nothing on its own examples"


def test_rules_reference_is_current() -> None:
    from pathlib import Path

    from ms_fmk_transplt.ruleset.reference import rules_markdown

    committed = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text()
    assert committed == rules_markdown(RULES), "run: ms_fmk_transplt rules doc -o docs/rules.md"
