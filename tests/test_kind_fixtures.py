"""Each rule kind's own fixtures: tests/fixtures/kinds/<kind>/, one folder per registered kind.

A folder's rules.json (the user rule file format) holds entries of its kind only, and its cases
convert with those rules alone, without the built-in rules, so that a case shows what the kind
does by itself. A kind whose rewrite needs another kind's (PatchTargetRule's targets follow
ModuleMemberRule's renames; a fused call needs ImportInsertRule's `import torch_npu`) names those
built-in rules in its folder's builtin_rules.txt, one `<id>: <why>` a line, and converts with
them too: <case>.in.py becomes <case>.out.py with <case>.findings, and a case without
.out.py (the must-not-change twin that looks alike) must not change. The rules' `opt_in` names
are opted into, and the file's `targets` chooses the target. The checks are those of the topic
fixtures (tests/test_fixtures.py): output, findings, idempotence; `--update-fixtures` rewrites them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_fixtures import _check

from ms_fmk_transplt.engine.interface import Rule, Tables
from ms_fmk_transplt.ruleset import compile_rules, load_rules
from ms_fmk_transplt.ruleset import kinds as kinds_package
from ms_fmk_transplt.ruleset.loader import load_builtin_rules
from ms_fmk_transplt.ruleset.registry import all_kinds

KINDS = Path(__file__).parent / "fixtures" / "kinds"


def _shipped_kinds() -> set[str]:
    """The kinds registered by the package's own kind modules (not a test's throwaway kind)."""
    prefix = kinds_package.__name__ + "."
    return {name for name, k in all_kinds().items() if k.compile.__module__.startswith(prefix)}


def _cases() -> list[Path]:
    return sorted(KINDS.glob("*/*.in.py"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name[: -len('.in.py')]}"


def _tables(folder: Path) -> Tables:
    """The folder's rules, after the built-in rules its builtin_rules.txt names, with their
    opt-ins, for the target its rule file names."""
    rules_file = folder / "rules.json"
    target = json.loads(rules_file.read_text()).get("targets", ["npu"])[0]
    rules = _builtin_rules_named(folder, target) + load_rules([rules_file], builtin=False, target=target)
    opt_ins = sorted({r.params["opt_in"] for r in rules if "opt_in" in r.params})
    return compile_rules(rules, opt_ins=opt_ins, target=target)


def _builtin_rules_named(folder: Path, target: str) -> list[Rule]:
    named = folder / "builtin_rules.txt"
    if not named.exists():
        return []
    ids = [line.split(":", 1)[0].strip() for line in named.read_text().splitlines() if line.strip()]
    by_id = {r.id: r for r in load_builtin_rules(target=target)}
    missing = [i for i in ids if i not in by_id]
    assert not missing, f"{named}: no built-in rules {missing}"
    return [by_id[i] for i in ids]


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_kind_fixture(case: Path, update_fixtures: bool) -> None:
    # the support lists' verdicts are the findings of ApiSupportRule's cases
    _check(case, _tables(case.parent), update_fixtures, checks=case.parent.name == "ApiSupportRule")


def test_every_kind_has_its_fixtures() -> None:
    """Adding a kind means adding tests/fixtures/kinds/<kind>/; a folder names a shipped kind."""
    folders = {p.name for p in KINDS.iterdir() if p.is_dir()}
    shipped = _shipped_kinds()
    assert sorted(shipped - folders) == [], "kinds without fixtures under tests/fixtures/kinds/"
    assert sorted(folders - shipped) == [], "folders under tests/fixtures/kinds/ that name no kind"


@pytest.mark.parametrize("folder", sorted(p for p in KINDS.iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_kind_folder_holds_its_kind_only(folder: Path) -> None:
    """Its rules are of its kind; it has a case that changes or reports and a must-not-change twin."""
    rules = load_rules([folder / "rules.json"], builtin=False)
    assert rules and {r.kind for r in rules} == {folder.name}
    cases = sorted(folder.glob("*.in.py"))
    twins = [c for c in cases if c.name.endswith("_twin.in.py")]
    acting = [c for c in cases if c not in twins and (_out(c).exists() or _findings(c).read_text())]
    assert acting, f"{folder} needs a case its kind rewrites or reports"
    assert twins, f"{folder} needs a must-not-change twin (<case>_twin.in.py)"
    for twin in twins:
        assert (twin.parent / twin.name.replace("_twin.in.py", ".in.py")).exists(), f"{twin.name} has no case"
        assert not _out(twin).exists() and not _findings(twin).read_text(), f"{twin.name} must be left alone"


def _out(case: Path) -> Path:
    return case.with_name(case.name.replace(".in.py", ".out.py"))


def _findings(case: Path) -> Path:
    return case.with_name(case.name.replace(".in.py", ".findings"))
