"""Each kind of rule-file error gives one exact line naming the file, the JSON location and the problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ms_fmk_transplt.ruleset import RuleFileError, load_rule_file, load_rules


def _write(tmp_path: Path, document, name: str = "rules.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def _error(tmp_path: Path, document) -> str:
    path = _write(tmp_path, document)
    with pytest.raises(RuleFileError) as info:
        load_rule_file(path)
    return str(info.value).replace(str(path), "FILE")


def test_guide_example_loads(tmp_path: Path) -> None:
    doc = {
        "rules": {
            "ArgsModifyRule": [
                {"func_name": "name1", "arg_idx": 0, "arg_new": "agrs0"},
                {"func_name": "name2", "arg_idx": 0, "arg_new": "agrs0"},
            ],
            "FuncNameModifyRule": [{"old_name": "func", "new_name": "new_func"}],
            "ModuleNameModifyRule": [
                {"old_name": "module", "new_name": "new_module", "parent_module": "parent_module"}
            ],
        }
    }
    rules = load_rule_file(_write(tmp_path, doc))
    assert [r.id for r in rules] == ["U001", "U002", "U003", "U004"]
    assert rules[0].summary == "argument 0 of name1 becomes agrs0"


@pytest.mark.parametrize(
    "document,message",
    [
        ('{"rules": {', "FILE:1:12: invalid JSON: Expecting property name enclosed in double quotes"),
        ("[]", "FILE: /: [] is not of type 'object'"),
        ({}, "FILE: /: 'rules' is required"),
        ({"rules": []}, "FILE: /rules: [] is not of type 'object'"),
        (
            {"rules": {"RenameRule": []}},
            "FILE: /rules: unknown rule kind 'RenameRule'; valid kinds: ApiSupportRule, ArgValueRule, "
            "ArgsModifyRule, AttributeRenameRule, CudaSourceRule, EnvVarRule, FuncNameModifyRule, ImportInsertRule, KeywordDefaultRule, "
            "KeywordRenameRule, MapLocationRule, "
            "MethodRenameRule, ModuleMemberRule, ModuleNameModifyRule, PatchTargetRule, ResultUseRule, StringLiteralRule, TextScanRule, UnsupportedApiRule",
        ),
        (
            {"rules": {"StringLiteralRule": [{"pattern": "cuda(", "old": "cuda", "new": "npu"}]}},
            "FILE: /rules/StringLiteralRule/0/pattern: not a valid regular expression (missing ), unterminated subpattern",
        ),
        (
            {
                "rules": {
                    "MapLocationRule": [
                        {
                            "calls": {"torch.load": 1},
                            "report_missing": ["torch.jit.load"],
                            "pattern": "cuda(:\\d+)?",
                            "old": "cuda",
                            "new": "npu",
                            "suggestion": "pass map_location",
                        }
                    ]
                }
            },
            "FILE: /rules/MapLocationRule/0/report_missing[0]: 'torch.jit.load' is not one of the calls",
        ),
        (
            {"rules": {"EnvVarRule": [{"name": "NCCL_*", "new_name": "HCCL_X"}]}},
            "FILE: /rules/EnvVarRule/0/new_name: a prefix rule can only report; new_name must be a plain variable name",
        ),
        (
            {
                "rules": {
                    "FuncNameModifyRule": [
                        {"old_name": "a.f", "new_name": "a.g", "opt_in": "Fused Optimizers"}
                    ]
                }
            },
            "FILE: /rules/FuncNameModifyRule/0/opt_in: 'Fused Optimizers' does not match '^[a-z][a-z0-9_-]*$'",
        ),
        (
            {"rules": {"FuncNameModifyRule": [{"old_name": "a.b"}]}},
            "FILE: /rules/FuncNameModifyRule/0: 'new_name' is required",
        ),
        (
            {
                "rules": {
                    "StringLiteralRule": [
                        {"pattern": "(x,)*cuda:nccl", "old": "gpu", "new": "npu", "everywhere": True}
                    ]
                }
            },
            "FILE: /rules/StringLiteralRule/0/old: with everywhere, the pattern must spell out 'gpu'",
        ),
        (
            {"rules": {"ArgValueRule": [{"func_name": "a.T", "keyword": "accelerator", "values": []}]}},
            "FILE: /rules/ArgValueRule/0: 'suggestion' is required",
        ),
        (
            {"rules": {"PatchTargetRule": [{"func_name": "unittest..patch"}]}},
            "FILE: /rules/PatchTargetRule/0/func_name: 'unittest..patch' is not a valid dotted name (identifiers joined by '.')",
        ),
        (
            {"rules": {"FuncNameModifyRule": [{"old_name": "a.b", "new_name": 3}]}},
            "FILE: /rules/FuncNameModifyRule/0/new_name: 3 is not of type 'string'",
        ),
        (
            {"rules": {"FuncNameModifyRule": [{"old_name": "a..b", "new_name": "c"}]}},
            "FILE: /rules/FuncNameModifyRule/0/old_name: 'a..b' is not a valid dotted name (identifiers joined by '.')",
        ),
        (
            {"rules": {"FuncNameModifyRule": [{"old_name": "f", "new_name": "a.g"}]}},
            "FILE: /rules/FuncNameModifyRule/0/new_name: a bare old_name renames by name alone, so new_name must be a bare name too",
        ),
        (
            {
                "rules": {
                    "ModuleNameModifyRule": [
                        {"old_name": "cuda", "new_name": "npu", "parent_module": "class"}
                    ]
                }
            },
            "FILE: /rules/ModuleNameModifyRule/0/parent_module: 'class' is not a valid dotted name (identifiers joined by '.')",
        ),
        (
            {"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": -1, "arg_new": "1"}]}},
            "FILE: /rules/ArgsModifyRule/0/arg_idx: -1 is less than the minimum of 0",
        ),
        (
            {"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": "0", "arg_new": "1"}]}},
            "FILE: /rules/ArgsModifyRule/0/arg_idx: '0' is not of type 'integer'",
        ),
        (
            {"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 0, "arg_new": "'npu"}]}},
            'FILE: /rules/ArgsModifyRule/0/arg_new: "\'npu" does not parse as a Python expression',
        ),
        (
            {
                "rules": {
                    "FuncNameModifyRule": [
                        {"old_name": "a.f", "new_name": "b"},
                        {"old_name": "a.f", "new_name": "c"},
                    ]
                }
            },
            "FILE: /rules/FuncNameModifyRule/1: duplicate of the rule at /rules/FuncNameModifyRule/0",
        ),
        (
            {"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "b", "id": "x1"}]}},
            "FILE: /rules/FuncNameModifyRule/0/id: 'x1' does not match '^[A-Z]{1,4}[0-9]{3}$'",
        ),
        (
            {
                "rules": {
                    "FuncNameModifyRule": [
                        {"old_name": "a.f", "new_name": "a.g", "examples": [{"before": "def"}]}
                    ]
                }
            },
            "FILE: /rules/FuncNameModifyRule/0/examples/0: example is not valid Python",
        ),
    ],
)
def test_rule_file_error(tmp_path: Path, document, message: str) -> None:
    error = _error(tmp_path, document)
    assert error.startswith(message), error
    assert "\n" not in error


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RuleFileError, match=r"nope\.json: rule file not found$"):
        load_rule_file(tmp_path / "nope.json")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(b'{"rules": {}}\xff')
    with pytest.raises(RuleFileError, match=r"r\.json: not UTF-8 text \(invalid start byte at byte 13\)$"):
        load_rule_file(path)


def test_duplicate_across_files(tmp_path: Path) -> None:
    doc = {"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g"}]}}
    first, second = _write(tmp_path, doc, "one.json"), _write(tmp_path, doc, "two.json")
    with pytest.raises(RuleFileError) as info:
        load_rules([first, second])
    assert (
        str(info.value)
        == f"{second}:/rules/FuncNameModifyRule/0: duplicate of the rule at {first}:/rules/FuncNameModifyRule/0"
    )


def test_unknown_key_warns(tmp_path: Path) -> None:
    warnings: list[str] = []
    doc = {"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g", "comment": "why"}]}}
    load_rule_file(_write(tmp_path, doc), warnings=warnings)
    assert warnings == [
        f"{tmp_path / 'rules.json'}: /rules/FuncNameModifyRule/0/comment: unknown key ignored "
        "(valid: examples, id, message, needs_torch_npu, new_name, old_name, opt_in, suggestion, summary, tags)"
    ]


def test_user_ids_continue_across_files(tmp_path: Path) -> None:
    a = _write(
        tmp_path, {"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g"}]}}, "a.json"
    )
    b = _write(
        tmp_path, {"rules": {"FuncNameModifyRule": [{"old_name": "b.f", "new_name": "b.g"}]}}, "b.json"
    )
    assert [r.id for r in load_rules([a, b], builtin=False)] == ["U001", "U002"]
