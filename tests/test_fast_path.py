"""The ast fast path (engine/conversion/fast_path.py) gives the libcst path's result, and is taken where it should."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ms_fmk_transplt.engine.conversion import convert_source, fast_path
from ms_fmk_transplt.engine.interface import ANY, Tables, hooks
from ms_fmk_transplt.ruleset import compile_rules, load_rules
from ms_fmk_transplt.ruleset.kinds.api_support_rule import ReleaseSupport

FIXTURES = Path(__file__).parent / "fixtures"
FORMS = FIXTURES / "fast_path"


@pytest.fixture(scope="module")
def accelerator_tables() -> Tables:
    return compile_rules(load_rules(target="accelerator"), target="accelerator")


@pytest.mark.parametrize("case", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_converts_the_same_without_the_fast_path_for_any_accelerator(
    accelerator_tables: Tables, case: Path
) -> None:
    data = case.read_bytes()
    assert convert_source(case.name, data, accelerator_tables) == convert_source(
        case.name, data, accelerator_tables, fast=False
    )


def _fast(path: Path, data: bytes, tables: Tables):
    return fast_path.classify(path.name, data, ast.parse(data), tables)


@pytest.mark.parametrize("case", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_converts_the_same_without_the_fast_path(builtin_tables, case: Path) -> None:
    data = case.read_bytes()
    assert convert_source(case.name, data, builtin_tables) == convert_source(
        case.name, data, builtin_tables, fast=False
    )


@pytest.mark.parametrize("case", sorted(FORMS.glob("*.py")), ids=lambda p: p.name)
def test_the_forms_are_classified_on_ast_as_on_libcst(builtin_tables, case: Path) -> None:
    data = case.read_bytes()
    assert not builtin_tables.could_rewrite(data), "a fast-path form must hold no text trigger"
    full = convert_source(case.name, data, builtin_tables, fast=False)
    fast = _fast(case, data, builtin_tables)
    if case.name.startswith("fallback"):
        assert fast is None
        return
    assert fast is not None, "the fast path gave this file to libcst"
    assert fast == full
    assert fast.findings  # the forms report something


def test_the_forms_cover_columns_order_and_dtypes(builtin_tables) -> None:
    """Guard against forms that no longer say anything: the cases the port must get right appear."""
    result = _fast(FORMS / "classify_forms.py", (FORMS / "classify_forms.py").read_bytes(), builtin_tables)
    assert result is not None
    findings = result.findings
    assert any(f.support is not None and f.support.value == "unsupported-dtype" for f in findings)
    assert any(f.heuristic for f in findings)  # x.half() and friends, by method name
    unicode_line = next(
        n for n, line in enumerate((FORMS / "classify_forms.py").read_text().splitlines(), 1) if "λ" in line
    )
    on_it = [f for f in findings if f.start_line == unicode_line]
    assert on_it and all(f.column > len('    label = "λ température";  ') - 2 for f in on_it)
    keys = [(f.start_line, f.column, f.end_line, f.rule_id) for f in findings]
    assert keys == sorted(keys)


def test_a_use_of_a_rule_name_sends_the_file_to_libcst(builtin_tables) -> None:
    cases = {
        "import torch\nstate = torch.load('w.pt')\n": "a call map_location reads",
        "import torch\nfrom torch import accelerator\nn = accelerator.device_count()\n": "an API that needs torch_npu",
        "import torch\nimport torch.cuda\n": "an import a rule renames (no text trigger: 'cuda' is one)",
        "import torch\nfrom unittest import mock\nwith mock.patch('torch.load'):\n    pass\n": "a patch target a rule acts on",
        "import torch\nimport cupy as cp\nk = cp.RawKernel('', 'k')\n": "a module a rule reports, under an alias",
        "import torch\nfrom xformers import ops as xops\ny = xops.memory_efficient_attention\n": "a reported module's member",
    }
    for source, why in cases.items():
        data = source.encode()
        if builtin_tables.could_rewrite(data):
            continue  # a text trigger already sends it to libcst
        assert _fast(Path("f.py"), data, builtin_tables) is None, why
        assert convert_source("f.py", data, builtin_tables) == convert_source(
            "f.py", data, builtin_tables, fast=False
        )


def test_every_name_a_rule_acts_on_is_a_trigger_name(builtin_tables) -> None:
    """The fast path sees rules by their trigger names: every hook table key must be one."""
    tables = builtin_tables
    names = tables.trigger_names

    def covered(name: str) -> bool:
        parts = name.split(".")
        return name in tables.path_string_calls or any(
            ".".join(parts[:end]) in names for end in range(1, len(parts) + 1)
        )

    keyed = [
        *(key for key in tables.hooks.keyed(hooks.QUALIFIED) if key != "*"),
        *(key.lstrip(".") for key in tables.hooks.keyed(hooks.CALLS)),
        *tables.hooks.keyed(hooks.METHODS),
        *tables.hooks.keyed(hooks.FUNCTIONS),
        *tables.hooks.keyed(hooks.ATTRIBUTES),
        *tables.hooks.keyed(hooks.RESULTS),
        *(name for hook in tables.hooks.all(hooks.IMPORTS) for name in hook.rule.params.get("when_used", ())),
    ]
    assert keyed and [name for name in keyed if not covered(name)] == []


def test_user_rules_leave_their_names(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(
        '{"rules": {"FuncNameModifyRule": [{"old_name": "apply_rotary", "new_name": "npu_rotary"}],'
        ' "ArgsModifyRule": [{"func_name": "mylib.load", "arg_idx": 1, "arg_new": "\'cpu\'"}]}}'
    )
    tables = compile_rules(load_rules([rules]))
    for source in (
        "import torch\nfrom mylib import load\nload('x', 'gpu0')\n",
        "import torch\nfrom rope import apply_rotary\ny = apply_rotary(torch.ones(2))\n",
    ):
        data = source.encode()
        assert not tables.could_rewrite(data)
        assert _fast(Path("f.py"), data, tables) is None
        assert convert_source("f.py", data, tables) == convert_source("f.py", data, tables, fast=False)


def test_without_the_text_prefilter_the_fast_path_still_agrees(builtin_tables) -> None:
    """Every fixture sent down the fast path whenever it takes it: where it does not fall back,
    its result is libcst's (the trigger words only make it rarer)."""
    unfiltered = copy.copy(builtin_tables)
    unfiltered.text_triggers = set()
    taken = 0
    for case in sorted((FIXTURES / "rules").rglob("*.py")):
        data = case.read_bytes()
        try:
            tree = ast.parse(data)
        except SyntaxError:
            continue
        fast = fast_path.classify(case.name, data, tree, unfiltered)
        if fast is None or not builtin_tables.could_match(data):
            continue
        full = convert_source(case.name, data, builtin_tables, fast=False)
        if full.status.value == "unchanged" and _only_classified(full, builtin_tables):
            taken += 1
            assert fast == full, case
    assert taken > 20


def _only_classified(result, tables: Tables) -> bool:
    lists = tables.hooks.one(hooks.SUPPORT, ANY)
    assert isinstance(lists, ReleaseSupport)
    ids = {entry.rule.id for entry in lists.apis.values()} | {lists.rule.id}
    return all(f.rule_id in ids for f in result.findings)


STATEMENTS = [
    "import torch\n",
    "import torch.nn as nn\n",
    "from torch import nn\n",
    "import torch.nn.functional as F\n",
    "T = torch\n",
    "torch = object()\n",
    "nn = None\n",
    "x = torch.randn(3).half()\n",
    "y = F.gelu(x).double().sum()\n",
    "z = torch.zeros(2, dtype=torch.float64)\n",
    "w = T.quantile(x, 0.5)\n",
    "class M(nn.Module):\n    def half(self):\n        return self.half()\n",
    "@torch.jit.script\ndef f(a: torch.Tensor) -> torch.Tensor:\n    return a.cummax(0)\n",
    "v = 'a'.split() + [1].copy()\n",
    "u = f'{x.sum()}'\n",
    "g = getattr(torch, 'relu')\n",
    "for n in torch.unbind(x):\n    pass\n",
    "def h():\n    global F\n    return F\n",
    "q = x.to(torch.half).histc()\n",
    # bare string statements (prose, even holding a call), annotations, nested scopes
    "f'{x.half()} {torch.quantile(x, 0.5)}'\n",
    '"""torch.quantile(x)"""\n',
    "a: torch.Tensor = x.half()\n",
    "def k(b: 'torch.Tensor' = x.double()) -> torch.Tensor:\n    '''x.half()'''\n    return b.histc()\n",
    "class N:\n    '''doc'''\n    @staticmethod\n    def half():\n        return torch.zeros(1).half()\n",
    "\n",
]


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(STATEMENTS), max_size=8))
def test_random_files_agree(builtin_tables, lines: list[str]) -> None:
    data = "".join(lines).encode()
    assert convert_source("p.py", data, builtin_tables) == convert_source(
        "p.py", data, builtin_tables, fast=False
    )


def test_patch_targets_go_to_libcst_only_when_they_spell_a_rule_name(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(
        '{"rules": {"FuncNameModifyRule": [{"old_name": "torch.nn.functional.gelu", "new_name": "torch_npu.npu_gelu"}]}}'
    )
    tables = compile_rules(load_rules([rules]))
    renamed = "import torch\nfrom unittest import mock\n\ndef test(monkeypatch):\n    monkeypatch.setattr('torch.nn.functional.gelu', None)\n"
    other = renamed.replace("torch.nn.functional.gelu", "pkg.other.helper")
    plain = "import torch\n\nclass A:\n    pass\n\nsetattr(A, 'size', torch.ones(2).size())\n"
    for source, fast in ((renamed, False), (other, True), (plain, True)):
        data = source.encode()
        assert not tables.could_rewrite(data)
        result = _fast(Path("t.py"), data, tables)
        assert (result is not None) is fast, source
        full = convert_source("t.py", data, tables, fast=False)
        assert convert_source("t.py", data, tables) == full
    assert convert_source("t.py", renamed.encode(), tables).output is not None  # the target was renamed


def test_the_fast_path_walks_the_tree_itself(builtin_tables, monkeypatch: pytest.MonkeyPatch) -> None:
    """One walk of its own over the tree: ast.walk and ast.iter_fields (a generator per node each)
    were most of the fast path's time on timm, walking every tree twice."""
    data = (FORMS / "classify_forms.py").read_bytes()
    tree = ast.parse(data)
    expected = convert_source("classify_forms.py", data, builtin_tables, fast=False)

    def refused(*args: object) -> None:
        raise AssertionError("a generic walk of the tree")

    with monkeypatch.context() as patched:  # undone before pytest reports (it walks trees too)
        for name in ("walk", "iter_fields", "iter_child_nodes"):
            patched.setattr(ast, name, refused)
        try:
            result = fast_path.classify("classify_forms.py", data, tree, builtin_tables)
        except AssertionError as exc:
            result = exc
    assert result == expected
