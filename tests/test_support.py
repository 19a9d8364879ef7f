"""Support classification: per release, per status, and messages that never repeat themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import convert_text

from ms_fmk_transplt.engine.interface import ANY, SUPPORT, Tables
from ms_fmk_transplt.engine.reporting import join_clauses
from ms_fmk_transplt.records import Operation, Support
from ms_fmk_transplt.ruleset import compile_rules, load_rules
from ms_fmk_transplt.ruleset.kinds.api_support_rule import ReleaseSupport

SOURCE = "import torch\nz = torch.zeros(2)\ntorch.set_grad_enabled(False)\ny = x.to_sparse()\n"


def _classified(release: str) -> dict[str, Support]:
    tables = compile_rules(load_rules(), release=release)
    _, result = convert_text(SOURCE, tables)
    found = {f.api: f.support for f in result.findings if f.support is not None}
    # supported uses are counted, not listed
    return {**dict.fromkeys(("torch.zeros", "torch.set_grad_enabled"), Support.SUPPORTED), **found}


def test_classification_differs_between_releases() -> None:
    old, new = _classified("2.1.0"), _classified("2.12.0")
    assert old["torch.zeros"] is Support.PARTIAL and new["torch.zeros"] is Support.SUPPORTED
    assert old["torch.set_grad_enabled"] is Support.SUPPORTED
    assert new["torch.set_grad_enabled"] is Support.NOT_VERIFIED
    assert old["torch.Tensor.to_sparse"] is new["torch.Tensor.to_sparse"] is Support.UNSUPPORTED


def test_partial_findings_carry_dtypes_and_supported_uses_are_counted(builtin_tables) -> None:
    _, result = convert_text("import torch\na = torch.matmul(x, y)\nb = torch.zeros(2)\n", builtin_tables)
    (partial,) = result.findings
    assert (partial.api, partial.support, partial.dtypes) == ("torch.matmul", Support.PARTIAL, "fp16 fp32")
    assert partial.operation is Operation.CHECK and partial.column == 5
    assert result.supported == 1


def test_tensor_method_is_heuristic_and_explicit_name_is_not(builtin_tables) -> None:
    source = "import torch\na = x.unique_consecutive()\nb = torch.Tensor.unique_consecutive(x)\n"
    _, result = convert_text(source, builtin_tables)
    assert [(f.start_line, f.heuristic, f.support) for f in result.findings] == [
        (2, True, Support.UNSUPPORTED),
        (3, False, Support.UNSUPPORTED),
    ]


@pytest.mark.parametrize(
    "parts,joined",
    [
        (
            ("X has no effect on the NPU", "kernel selection; no effect on the NPU"),
            "X has no effect on the NPU; kernel selection",
        ),
        (("a b", "c"), "a b; c"),
        (("a b.", ""), "a b"),
    ],
)
def test_join_clauses_drops_repeats(parts, joined) -> None:
    assert join_clauses(*parts) == joined


def _repeats(message: str) -> bool:
    """Some run of four words appears twice."""
    words = re.findall(r"[a-z0-9_.]+", message.lower())
    grams = [tuple(words[i : i + 4]) for i in range(len(words) - 3)]
    return len(grams) != len(set(grams))


def test_no_builtin_rule_message_repeats_itself(builtin_tables) -> None:
    for rule in load_rules():
        for example in rule.examples:
            if example.file:
                continue
            tables = (
                compile_rules(load_rules(), release=example.release) if example.release else builtin_tables
            )
            _, result = convert_text(example.before, tables)
            for finding in result.findings:
                assert not _repeats(finding.message), f"{rule.id}: {finding.message}"


def test_release_index_agrees_with_the_shipped_release_files() -> None:
    """data/releases.json (read at every start) lists exactly the shipped per-release files."""
    from importlib import resources

    from ms_fmk_transplt import data

    shipped = {
        p.name.removeprefix("ascend_release_").removesuffix(".json")
        for p in resources.files(data.__name__).iterdir()
        if p.name.startswith("ascend_release_")
    }
    assert set(data.releases()) == shipped
    assert data.releases() == sorted(data.releases(), key=lambda v: tuple(int(x) for x in v.split(".")))
    assert data.default_release() == data.releases()[-1] == "2.13.0"
    for version in data.releases():
        assert data.release(version)["support"], version
    assert data.mappings()["mappings"]


def test_log_lists_what_will_not_run_then_changes_then_the_uses_to_check(tmp_path: Path) -> None:
    from ms_fmk_transplt.run import LOG_NAME, Options, convert_project

    source = tmp_path / "proj"
    source.mkdir()
    (source / "a.py").write_text(
        "import torch\nz = torch.zeros(2)\nx = torch.jit.load('m.pt', map_location='cpu')\ny = z.cuda()\ns = z.to_sparse()\n"
        "torch.backends.cudnn.benchmark = True\n"
    )
    run = convert_project(Options(source=source, output=tmp_path / "out", use_cache=False))
    log = (Path(run.output_root) / LOG_NAME).read_text()
    head, rest = log.split("== will not run on the NPU as written")
    blocking, rest = rest.split("== changes ==\n")
    changes, checks = rest.split("== to check on the NPU")
    assert "unsupported APIs: 1 API in 1 place" in head
    assert "a.py:5 [TP901] UNSUPPORTED torch.Tensor.to_sparse is unsupported" in blocking
    assert "a.py:6 [TP701] NO-EFFECT torch.backends.cudnn has no effect" in blocking
    assert "MODIFY" in changes and "NOT-VERIFIED" not in changes and "UNSUPPORTED" not in changes
    assert "NOT-VERIFIED torch.jit.load is not verified" in checks.split("== skipped files ==")[0]
    assert "torch.Tensor.cuda" not in log  # classified as converted: x.npu()


def test_advice_is_the_rules_own_per_api(builtin_tables) -> None:
    source = (
        "import torch\nfrom torch.distributed.tensor.parallel import parallelize_module\n"
        "m = torch.nn.DataParallel(net)\np = parallelize_module(m, mesh, plan)\n"
        "r = torch.nn.RNN(4, 4)\ns = x.to_sparse()\nv = torch.var_mean(x)\n"
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\no = FSDP.optim_state_dict(m, opt)\n"
    )
    _, result = convert_text(source, builtin_tables)
    advice = {f.api: f.suggestion for f in result.findings if f.support is Support.UNSUPPORTED}
    assert set(advice) == {
        "torch.nn.DataParallel",
        "torch.distributed.tensor.parallel.parallelize_module",
        "torch.nn.RNN",
        "torch.Tensor.to_sparse",
        "torch.var_mean",
        "torch.distributed.fsdp.FullyShardedDataParallel.optim_state_dict",
    }
    assert len(set(advice.values())) == len(advice), "one sentence for all"
    assert "DistributedDataParallel" in advice["torch.nn.DataParallel"]
    assert "2.13.0" in advice["torch.distributed.tensor.parallel.parallelize_module"]  # {release} filled
    assert ".cpu()" in advice["torch.Tensor.to_sparse"]


def test_advice_names_must_be_dotted(tmp_path: Path) -> None:
    from ms_fmk_transplt.ruleset import RuleFileError, load_rule_file

    path = tmp_path / "rules.json"
    path.write_text(
        '{"rules": {"ApiSupportRule": [{"id": "U901", "source": "api_support", "advice": {"torch..x": "y"}}]}}'
    )
    with pytest.raises(RuleFileError) as info:
        load_rule_file(path)
    assert str(info.value) == (
        f'{path}: /rules/ApiSupportRule/0/advice/torch..x: "torch..x" is not a valid dotted name'
        " (identifiers joined by '.')"
    )


def test_an_api_backed_by_an_npu_kernel_is_supported_and_counted(builtin_tables) -> None:
    _, result = convert_text("import torch\ny = torch.relu(x)\nz = torch.special.erfcx(x)\n", builtin_tables)
    (doubt,) = result.findings
    assert (doubt.api, doubt.support) == ("torch.special.erfcx", Support.NOT_VERIFIED)
    assert doubt.source == "no list entry; aten::special_erfcx has no NPU kernel of its own"
    assert result.supported_by_kernel == 1  # torch.relu: aten::relu has an NPU kernel
    old = compile_rules(load_rules(), release="2.1.0")
    old_ops, new_ops = (_lists(tables).aten_ops for tables in (old, builtin_tables))
    assert "relu" in old_ops and old_ops != new_ops


def _lists(tables: Tables) -> ReleaseSupport:
    """The release's support lists: the support kind's hook."""
    hook = tables.hooks.one(SUPPORT, ANY)
    assert isinstance(hook, ReleaseSupport)
    return hook


def test_the_converted_name_is_classified_never_the_old_one(builtin_tables) -> None:
    source = "import torch\nx = y.cuda()\ntorch.cuda.synchronize()\nn = torch.cuda.device_count()\n"
    converted, result = convert_text(source, builtin_tables)
    assert "y.npu()" in converted
    apis = {f.api for f in result.findings if f.support is not None}
    assert not {a for a in apis if "cuda" in a}
    assert result.supported >= 2  # torch.npu.synchronize, torch.npu.device_count


def test_a_dtype_the_code_shows_outside_a_partial_list_is_its_own_status(builtin_tables) -> None:
    source = "import torch\na = torch.matmul(x.double(), y)\nb = torch.matmul(x.half(), y)\n"
    _, result = convert_text(source, builtin_tables)
    found = [(f.start_line, f.api, f.support) for f in result.findings if f.api == "torch.matmul"]
    assert found == [(2, "torch.matmul", Support.DTYPE), (3, "torch.matmul", Support.PARTIAL)]
    dtype = next(f for f in result.findings if f.support is Support.DTYPE)
    assert dtype.operation is Operation.CHECK and "used with fp64" in dtype.message
