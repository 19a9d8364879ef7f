"""Every name a user types is checked and a near miss is named: rule kinds and keys, `rules list
--kind`, a source-text value that is a bare name (forgotten quotes); the pre-commit hook passes
notebooks; piped output is not folded at 80 columns."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt.cli import app
from ms_fmk_transplt.ruleset import RuleFileError
from ms_fmk_transplt.ruleset.loader import load_rule_file
from ms_fmk_transplt.suggest import closest, did_you_mean

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("word", "choices", "expected"),
    [
        ("ArgsModifyRul", ["ArgsModifyRule", "ArgValueRule"], "ArgsModifyRule"),
        ("argsmodifyrule", ["ArgsModifyRule"], "ArgsModifyRule"),  # case folded, spelled as the choice
        ("cnt", ["api", "count", "file"], "count"),
        ("zzzz", ["api", "count"], None),
        ("", ["api"], None),
    ],
)
def test_closest(word, choices, expected):
    assert closest(word, choices) == expected
    assert did_you_mean(word, choices) == (f" (did you mean {expected}?)" if expected else "")


def _rule_file(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(document))
    return path


def _error(tmp_path: Path, document: dict) -> str:
    with pytest.raises(RuleFileError) as info:
        load_rule_file(_rule_file(tmp_path, document))
    return str(info.value).replace(str(tmp_path / "rules.json"), "FILE")


def test_a_required_key_spelt_wrong_is_named(tmp_path):
    entry = {"func_name": "torch.distributed.init_process_group", "arg_idx": 0, "arg_nwe": "'hccl'"}
    assert _error(tmp_path, {"rules": {"ArgsModifyRule": [entry]}}) == (
        'FILE: /rules/ArgsModifyRule/0: "arg_new" is required (is "arg_nwe" a misspelling of it?)'
    )
    # the twin: a key missing with nothing close is said as before
    entry = {"func_name": "torch.distributed.init_process_group", "arg_idx": 0}
    assert _error(tmp_path, {"rules": {"ArgsModifyRule": [entry]}}) == (
        'FILE: /rules/ArgsModifyRule/0: "arg_new" is required'
    )


@pytest.mark.parametrize(
    ("kind", "entry", "key"),
    [
        ("ArgsModifyRule", {"func_name": "torch.distributed.init_process_group", "arg_idx": 0}, "arg_new"),
        (
            "KeywordDefaultRule",
            {"func_name": "torch.distributed.init_process_group", "keyword": "backend"},
            "value",
        ),
    ],
)
def test_a_bare_name_as_source_text_is_a_warning(tmp_path, kind, entry, key):
    """`"arg_new": "hccl"` writes `init_process_group(hccl)`, a variable: most often forgotten quotes."""
    warnings: list[str] = []
    load_rule_file(_rule_file(tmp_path, {"rules": {kind: [{**entry, key: "hccl"}]}}), warnings=warnings)
    assert warnings == [
        f'{tmp_path / "rules.json"}: /rules/{kind}/0/{key}: "hccl" is the bare name hccl, written as a '
        "variable; for the string write \"'hccl'\""
    ]
    # the twins: a string, a constant, an expression that is more than a name
    for value in ("'hccl'", "None", "True", "os.environ['B']", "backend or 'hccl'"):
        warnings.clear()
        load_rule_file(_rule_file(tmp_path, {"rules": {kind: [{**entry, key: value}]}}), warnings=warnings)
        assert warnings == [], value


def test_rules_list_refuses_an_unknown_kind():
    done = CliRunner().invoke(app, ["rules", "list", "--kind", "RenameRul"])
    assert done.exit_code == 2
    assert (
        "error: --kind RenameRul: no such rule kind (did you mean MethodRenameRule?); kinds: " in done.output
    )
    listed = CliRunner().invoke(app, ["rules", "list", "--kind", "MethodRenameRule"])
    assert listed.exit_code == 0 and "MethodRenameRule" in listed.output


def test_the_pre_commit_hook_passes_notebooks_too():
    import yaml  # pre-commit's own dependency, in the dev extra

    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["types_or"] == ["python", "jupyter"] and "types" not in hook


def test_piped_output_is_not_folded(tmp_path):
    """A path longer than 80 columns stays on one line when stderr is a pipe (a CI log, grep)."""
    folder = tmp_path / "src" / ("a_folder_with_a_long_name_" * 4) / "deeper"
    folder.mkdir(parents=True)
    (folder / "train_script_with_a_long_name.py").write_text(
        "import torch\ntorch.cuda.nvtx.range_push('x')\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "analyse", "src", "--no-xlsx", "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    rel = f"{'a_folder_with_a_long_name_' * 4}/deeper/train_script_with_a_long_name.py"
    assert rel in done.stderr, done.stderr
    # COLUMNS set by the user still decides
    narrow = subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "analyse", "src", "--no-xlsx", "--no-cache"],
        cwd=tmp_path,
        env={**env, "COLUMNS": "80"},
        capture_output=True,
        text=True,
    )
    assert rel not in narrow.stderr and max(len(line) for line in narrow.stderr.splitlines()) <= 80
