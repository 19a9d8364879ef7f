"""Fixture pairs, discovered from the tree.

tests/fixtures/rules/<topic>/<case>.in.py converts with the built-in rules to <case>.out.py,
with the findings in <case>.findings; a case without .out.py must not change at all.
tests/fixtures/user_rules/<case>/ adds its rules.json to the built-in rules.
Every output converts to itself again (idempotence).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import convert_text, findings_text

from ms_fmk_transplt.ruleset import compile_rules, load_rules
from ms_fmk_transplt.ruleset.loader import load_builtin_rules
from ms_fmk_transplt.targets import TARGETS

FIXTURES = Path(__file__).parent / "fixtures"


def _cases(kind: str) -> list[Path]:
    return sorted((FIXTURES / kind).glob("*/*.in.py"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name[: -len('.in.py')]}"


def _tables_for(case: Path, builtin_tables):
    """Built-in rules, plus the folder's rules.json; a folder named `topic@2.7.1` uses that release,
    `topic@accelerator` that --target (`topic@accelerator,2.8.0` both); one named `topic+affinity`
    runs with `--opt-in affinity`."""
    rules_file = case.parent / "rules.json"
    name, _, opt_in = case.parent.name.partition("+")
    options = [o for o in name.partition("@")[2].split(",") if o]
    target = next((o for o in options if o in TARGETS), "npu")
    release = next((o for o in options if o not in TARGETS), None)
    if rules_file.exists() or options or opt_in:
        rules = load_rules([rules_file] if rules_file.exists() else [], target=target)
        return compile_rules(rules, release=release or "", opt_ins=[opt_in] if opt_in else [], target=target)
    return builtin_tables


def _check(case: Path, tables, update: bool, checks: bool | None = None) -> None:
    """Compare a case's conversion with its snapshots; `checks` keeps the support-status findings
    (by default in the support topics' folders only)."""
    source = case.read_text()
    out_file = case.with_name(case.name.replace(".in.py", ".out.py"))
    findings_file = case.with_name(case.name.replace(".in.py", ".findings"))
    converted, result = convert_text(source, tables, case.name)
    if checks is None:
        checks = case.parent.name.startswith("support")  # the classification's own fixtures
    assert result.status.value in ("converted", "unchanged"), result.reason
    if update:
        if converted != source or out_file.exists():
            out_file.write_text(converted)
        findings_file.write_text(findings_text(result, checks))
    expected = out_file.read_text() if out_file.exists() else source
    assert converted == expected
    assert findings_text(result, checks) == findings_file.read_text()
    again, _ = convert_text(converted, tables, case.name)
    assert again == converted, "converting the output again changed it"


@pytest.mark.parametrize("case", _cases("rules"), ids=_id)
def test_builtin_rule_fixture(case: Path, builtin_tables, update_fixtures: bool) -> None:
    _check(case, _tables_for(case, builtin_tables), update_fixtures)


@pytest.mark.parametrize("case", _cases("user_rules"), ids=_id)
def test_user_rule_fixture(case: Path, builtin_tables, update_fixtures: bool) -> None:
    _check(case, _tables_for(case, builtin_tables), update_fixtures)


def test_every_rewrite_has_a_must_not_change_case() -> None:
    for kind in ("rules", "user_rules"):
        for folder in sorted(p for p in (FIXTURES / kind).iterdir() if p.is_dir()):
            cases = list(folder.glob("*.in.py"))
            unchanged = [c for c in cases if not c.with_name(c.name.replace(".in.py", ".out.py")).exists()]
            assert cases and unchanged, f"{folder} needs a must-not-change case (an .in.py without .out.py)"


def test_every_builtin_rule_fires_in_a_fixture() -> None:
    fired = {
        line.split()[2]
        for path in (FIXTURES / "rules").rglob("*.findings")
        for line in path.read_text().splitlines()
    }
    # text-scan rules report on launch scripts, not Python; tests/test_cli.py covers them
    every = load_builtin_rules(target=None)  # every --target's
    missing = {r.id for r in every if r.kind != "TextScanRule"} - fired
    assert not missing, f"built-in rules that no fixture exercises: {sorted(missing)}"


def test_readme_quotes_the_worked_example() -> None:
    readme = (FIXTURES.parent.parent / "README.md").read_text()
    folder = FIXTURES / "user_rules" / "readme_example"
    for name in ("rules.json", "worked.in.py", "worked.out.py"):
        text = (folder / name).read_text()
        assert text in readme, f"README's worked example no longer matches {name}"


def test_no_reported_message_says_the_same_thing_twice() -> None:
    """Messages are composed once: no clause of a finding repeats another ("...; no effect on the NPU")."""
    repeated = []
    for path in sorted(FIXTURES.rglob("*.findings")):
        for line in path.read_text().splitlines():
            message = line.split(" ", 3)[-1]
            clauses = [" ".join(c.lower().split()) for c in message.split(";")]
            for i, clause in enumerate(clauses):
                if any(clause and (clause in other or other.endswith(clause)) for other in clauses[:i]):
                    repeated.append(f"{path.name}: {line}")
    assert repeated == []
