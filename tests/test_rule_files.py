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
        ("[]", "FILE: /: [] is not an object"),
        ({}, 'FILE: /: "rules" is required'),
        ({"rules": []}, "FILE: /rules: [] is not an object"),
        (
            {"rules": {"RenameRule": []}},
            'FILE: /rules: unknown rule kind "RenameRule" (did you mean MethodRenameRule?); valid kinds: '
            "ApiSupportRule, ArgValueRule, "
            "ArgsModifyRule, AttributeRenameRule, AttributeTemplateRule, CallTemplateRule, CudaSourceRule, EnvVarRule, FuncNameModifyRule, FusedCallRule, FusedPatternRule, ImportInsertRule, KeywordDefaultRule, "
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
                    "ArgValueRule": [
                        {"func_name": "m.Model", "keyword": "mode", "pattern": "cuda[", "suggestion": "s"}
                    ]
                }
            },
            "FILE: /rules/ArgValueRule/0/pattern: not a valid regular expression",
        ),
        (
            {"rules": {"ArgValueRule": [{"func_name": "m.Model", "keyword": "mode", "suggestion": "s"}]}},
            "FILE: /rules/ArgValueRule/0/values: give the values to report, or a pattern they match",
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
            'FILE: /rules/MapLocationRule/0/report_missing/0: "torch.jit.load" is not one of the calls',
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
            'FILE: /rules/FuncNameModifyRule/0/opt_in: "Fused Optimizers" does not match the pattern ^[a-z][a-z0-9_-]*$',
        ),
        (
            {"rules": {"FuncNameModifyRule": [{"old_name": "a.b"}]}},
            'FILE: /rules/FuncNameModifyRule/0: "new_name" is required',
        ),
        (
            {
                "rules": {
                    "StringLiteralRule": [
                        {"pattern": "(x,)*cuda:nccl", "old": "gpu", "new": "npu", "everywhere": True}
                    ]
                }
            },
            'FILE: /rules/StringLiteralRule/0/old: with everywhere, the pattern must spell out "gpu"',
        ),
        (
            {"rules": {"ArgValueRule": [{"func_name": "a.T", "keyword": "accelerator", "values": []}]}},
            'FILE: /rules/ArgValueRule/0: "suggestion" is required',
        ),
        (
            {"rules": {"PatchTargetRule": [{"func_name": "unittest..patch"}]}},
            "FILE: /rules/PatchTargetRule/0/func_name: \"unittest..patch\" is not a valid dotted name (identifiers joined by '.')",
        ),
        (
            {
                "rules": {
                    "ModuleMemberRule": [
                        {"module": "a.b", "new_module": "c", "members": ["x"], "module_itself": "c..d"}
                    ]
                }
            },
            "FILE: /rules/ModuleMemberRule/0/module_itself: \"c..d\" is not a valid dotted name (identifiers joined by '.')",
        ),
        (
            {"rules": {"UnsupportedApiRule": [{"name": "apex.*_cuda"}]}},
            'FILE: /rules/UnsupportedApiRule/0/name: "apex.*_cuda" is not a glob on a module\'s name (letters, digits, _, *)',
        ),
        (
            {"rules": {"UnsupportedApiRule": [{"name": "**"}]}},
            'FILE: /rules/UnsupportedApiRule/0/name: "**" is not a glob on a module\'s name (letters, digits, _, *)',
        ),
        (
            {"rules": {"FuncNameModifyRule": [{"old_name": "a.b", "new_name": 3}]}},
            "FILE: /rules/FuncNameModifyRule/0/new_name: 3 is not a string",
        ),
        (
            {"rules": {"FuncNameModifyRule": [{"old_name": "a..b", "new_name": "c"}]}},
            "FILE: /rules/FuncNameModifyRule/0/old_name: \"a..b\" is not a valid dotted name (identifiers joined by '.')",
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
            "FILE: /rules/ModuleNameModifyRule/0/parent_module: \"class\" is not a valid dotted name (identifiers joined by '.')",
        ),
        (
            {"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": -1, "arg_new": "1"}]}},
            "FILE: /rules/ArgsModifyRule/0/arg_idx: -1 is less than the minimum of 0",
        ),
        (
            {"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": "0", "arg_new": "1"}]}},
            'FILE: /rules/ArgsModifyRule/0/arg_idx: "0" is not an integer',
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
            'FILE: /rules/FuncNameModifyRule/0/id: "x1" does not match the pattern ^[A-Z]{1,4}[0-9]{3}$',
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


_ARGS = {"func_name": "f", "arg_new": "1"}


@pytest.mark.parametrize(
    "document,message",
    [
        # integers: JSON Schema takes 1.0 for one and Python takes true; a rule file means neither
        ({"rules": {"ArgsModifyRule": [{**_ARGS, "arg_idx": 1.0}]}},
         "FILE: /rules/ArgsModifyRule/0/arg_idx: 1.0 is not an integer (write 1)"),
        ({"rules": {"ArgsModifyRule": [{**_ARGS, "arg_idx": 1.5}]}},
         "FILE: /rules/ArgsModifyRule/0/arg_idx: 1.5 is not an integer"),
        ({"rules": {"ArgsModifyRule": [{**_ARGS, "arg_idx": True}]}},
         "FILE: /rules/ArgsModifyRule/0/arg_idx: true is not an integer"),
        ({"rules": {"MapLocationRule": [{"calls": {"torch.load": 1.0}, "pattern": "cuda", "old": "cuda",
                                         "new": "npu", "suggestion": "s"}]}},
         "FILE: /rules/MapLocationRule/0/calls/torch.load: 1.0 is not an integer or null (write 1)"),
        # values quoted as JSON spells them
        ({"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": None}]}},
         "FILE: /rules/FuncNameModifyRule/0/new_name: null is not a string"),
        ({"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g", "needs_torch_npu": 1}]}},
         "FILE: /rules/FuncNameModifyRule/0/needs_torch_npu: 1 is not true or false"),
        ({"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g", "tags": [False]}]}},
         "FILE: /rules/FuncNameModifyRule/0/tags/0: false is not a string"),
        ({"rules": {"ApiSupportRule": [{"id": "U901", "source": "apis"}]}},
         'FILE: /rules/ApiSupportRule/0/source: "apis" is not one of "api_support", "msfmktransplt_support"'),
        ({"rules": {"TextScanRule": [{"id": "U901", "pattern": "x", "files": [], "message": "m"}]}},
         "FILE: /rules/TextScanRule/0/files: [] should not be empty"),
        ({"defaults": {"needs_torch_npu": None}, "rules": {}}, "FILE: /defaults/needs_torch_npu: null is not true or false"),
        # a key the schema closes is named itself, not its object
        ({"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g",
                                            "examples": [{"before": "a.f()", "afer": "a.g()"}]}]}},
         "FILE: /rules/FuncNameModifyRule/0/examples/0/afer: unknown key (did you mean after?) (valid: after, before, file, opt_in, release)"),
        # JSON Python reads but JSON has not: NaN, and a key given twice (Python keeps the last)
        ('{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_new": "1", "arg_idx": NaN}]}}',
         "FILE: invalid JSON: NaN is not a JSON value"),
        ('{"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g", "new_name": "a.h"}]}}',
         'FILE: /rules/FuncNameModifyRule/0: key "new_name" given twice (JSON keeps only the last)'),
        ('{"rules": {"FuncNameModifyRule": []}, "rules": {}}',
         'FILE: /: key "rules" given twice (JSON keeps only the last)'),
    ],
)  # fmt: skip
def test_json_values_are_checked_and_spelled_as_json(tmp_path: Path, document, message: str) -> None:
    assert _error(tmp_path, document) == message


def test_integers_and_json_words_that_are_right_still_load(tmp_path: Path) -> None:
    doc = {
        "defaults": {"needs_torch_npu": False},
        "rules": {"ArgsModifyRule": [{**_ARGS, "arg_idx": 1, "needs_torch_npu": True, "tags": ["x"]}]},
    }
    (rule,) = load_rule_file(_write(tmp_path, doc))
    assert rule.params["arg_idx"] == 1 and type(rule.params["arg_idx"]) is int and rule.needs_torch_npu


def test_unknown_keys_warn_at_every_level(tmp_path: Path) -> None:
    warnings: list[str] = []
    doc = {
        "rules": {
            "FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g", "comment": "why"}],
            "MapLocationRule": [
                {
                    "calls": {"torch.load": 1},
                    "pattern": "cuda",
                    "old": "cuda",
                    "new": "npu",
                    "suggestion": "s",
                }
            ],
        },
        "defaults": {"needs_torch_npu": True, "neds_torch_npu": False},
        "extra": 1,
    }
    load_rule_file(_write(tmp_path, doc), warnings=warnings)
    assert [w.replace(str(tmp_path / "rules.json"), "FILE") for w in warnings] == [
        "FILE: /rules/FuncNameModifyRule/0/comment: unknown key ignored (valid: examples, id, message, "
        "needs_torch_npu, new_name, old_name, opt_in, suggestion, summary, tags)",
        "FILE: /defaults/neds_torch_npu: unknown key ignored (did you mean needs_torch_npu?) (valid: needs_torch_npu)",
        "FILE: /extra: unknown key ignored (valid: defaults, rules, targets)",
    ]  # the calls of MapLocationRule are names the kind takes, not keys of the schema: no warning


def test_a_bom_before_the_json_is_accepted(tmp_path: Path) -> None:
    doc = {"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g"}]}}
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    assert [r.params["new_name"] for r in load_rule_file(path)] == ["a.g"]
    path.write_bytes(b'\xef\xbb\xbf{"rules": {')  # and positions after it are the text's own
    with pytest.raises(RuleFileError, match=r"bom\.json:1:12: invalid JSON"):
        load_rule_file(path)


def test_one_file_given_twice_is_loaded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    doc = {"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g"}]}}
    _write(tmp_path, doc, "one.json")
    (tmp_path / "sub").mkdir()
    warnings: list[str] = []
    rules = load_rules(["one.json", "./one.json", "sub/../one.json"], builtin=False, warnings=warnings)
    assert [r.id for r in rules] == ["U001"]
    assert warnings == [
        "./one.json: rule file given more than once (first as one.json); loaded once",
        "sub/../one.json: rule file given more than once (first as one.json); loaded once",
    ]


def test_the_reports_name_a_file_given_twice_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from ms_fmk_transplt.cli import app

    monkeypatch.chdir(tmp_path)
    _write(tmp_path, {"rules": {"FuncNameModifyRule": [{"old_name": "a.f", "new_name": "a.g"}]}}, "one.json")
    _write(tmp_path, {"rules": {"FuncNameModifyRule": [{"old_name": "b.f", "new_name": "b.g"}]}}, "two.json")
    (tmp_path / "sub").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("import a\na.f()\n")
    given = [
        "-r",
        "one.json",
        "-r",
        "./one.json",
        "-r",
        "two.json",
        "-r",
        "sub/../one.json",
        "-r",
        "two.json",
    ]
    done = CliRunner().invoke(
        app, ["-i", "src", "-o", "out", "-q", "--no-cache", *given], catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    log = (tmp_path / "out" / "src_msft" / "msFmkTranspltlog.txt").read_text()
    assert "rules:   built-in, one.json, two.json\n" in log
    summary = json.loads((tmp_path / "out" / "src_msft" / "report.json").read_text())
    assert summary["rule_files"] == ["one.json", "two.json"]
    assert (tmp_path / "out" / "src_msft" / "m.py").read_text() == "import a\na.g()\n"


def test_the_builtin_rules_pass_the_schema_checked_here_not_at_every_run() -> None:
    """A run loads the shipped rule files without the schema (load_builtin_rules): this is where
    they are checked against it, their examples compiled, and no key of theirs goes unread."""
    from ms_fmk_transplt.ruleset import load_builtin_rules

    warnings: list[str] = []
    checked = load_builtin_rules(validate=True)
    assert load_rules(warnings=warnings) == checked  # what a run loads
    assert warnings == []
    assert len(checked) > 50


def test_a_user_rule_file_is_still_checked_against_the_schema(tmp_path: Path) -> None:
    path = _write(tmp_path, {"rules": {"ArgsModifyRule": [{"func_name": 1, "arg_idx": 0, "arg_new": "a"}]}})
    with pytest.raises(RuleFileError, match="is not a string"):
        load_rules([path])


def test_a_user_rule_overrides_the_builtin_rule_of_its_kind_with_its_key_in_every_kind(
    tmp_path: Path,
) -> None:
    # a copy of every built-in rule as a user rule: each replaces its built-in, none is applied twice
    # (a kind whose hooks add up had reported both; one whose first match wins had kept the built-in)
    from ms_fmk_transplt.ruleset.loader import load_builtin_rules

    builtin = load_builtin_rules()
    document: dict[str, dict[str, list[dict]]] = {"rules": {}}
    for rule in builtin:
        document["rules"].setdefault(rule.kind, []).append(dict(rule.params))
    path = tmp_path / "copies.json"
    path.write_text(json.dumps(document))
    rules = load_rules([path])
    assert len(rules) == len(builtin)
    assert all(r.id.startswith("U") for r in rules)
    assert {r.kind for r in rules} == {r.kind for r in builtin}


def test_a_user_rule_with_another_key_adds_to_the_builtin_rules(tmp_path: Path) -> None:
    path = tmp_path / "extra.json"
    path.write_text(
        json.dumps(
            {"rules": {"FuncNameModifyRule": [{"old_name": "mylib.cuda_op", "new_name": "mylib.npu_op"}]}}
        )
    )
    builtin = load_rules([])
    rules = load_rules([path])
    assert len(rules) == len(builtin) + 1 and rules[-1].id == "U001"
