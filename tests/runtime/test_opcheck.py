"""Operator support check against the shipped torch_npu operator lists."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, run_python

from runtime_shim.diagnostics import opcheck
from runtime_shim.runtime.state import STATE


def test_shipped_lists_and_provenance_headers():
    assert opcheck.available_releases() == [
        "2.13.0", "2.12.0", "2.11.0", "2.10.0", "2.9.0", "2.8.0", "2.7.1", "2.6.0", "2.1.0"
    ]  # fmt: skip
    release = opcheck.load_release()
    # torch 2.13.0 has no operator list of its own: the nearest one, 2.12.0's, stands in and says so
    assert release.torch == "2.13.0" and release.torch_npu == "26.1.0" and release.ops_torch == "2.12.0"
    assert release.label == "torch_npu 26.1.0 for torch 2.12.0, the nearest list to torch 2.13.0"
    assert release.ops == opcheck.load_release("2.12.0").ops
    assert opcheck.load_release("2.12.0").label == "torch_npu 26.1.0 for torch 2.12.0"
    assert "addmm" in release.ops and "mm" in release.ops
    header = (
        (ROOT / "runtime_shim" / "data" / "npu_ops_torch2.12.0_torchnpu26.1.0.txt")
        .read_text()
        .splitlines()[:5]
    )
    assert any("Ascend/pytorch@fa0f83fe49d3(v26.1.0-pytorch2.12.0)" in line for line in header)
    assert any("aten_ops/npu_aten_ops_torch2.12.0_torchnpu26.1.0.txt" in line for line in header)
    with pytest.raises(ValueError, match=r"RUNTIME_SHIM_RELEASE=9\.9 is not a shipped release"):
        opcheck.load_release("9.9")


@pytest.mark.skipif(
    not (ROOT.parent / "shared" / "ascend-data").is_dir(),
    reason="../shared/ascend-data (the source of the shipped lists) is not on this machine",
)
def test_derive_script_reproduces_shipped_data(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "derive_runtime_data.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    for path in tmp_path.iterdir():
        assert path.read_text() == (ROOT / "runtime_shim" / "data" / path.name).read_text(), path.name


def test_support_rules():
    release = opcheck.load_release("2.12.0")
    assert opcheck.is_supported("addmm", release)
    assert opcheck.is_supported("_foreach_add_.List", release)  # generic per-tensor kernels
    assert not opcheck.is_supported("no_such_op", release)


def _find_unsupported_op():
    # An op with a CPU kernel that reaches the device but has no NPU kernel listed.
    release = opcheck.load_release()
    for name, fn in (("special_i1", lambda t: torch.special.i1(t)), ("logit", lambda t: torch.logit(t))):
        if not opcheck.is_supported(name, release):
            return name, fn
    pytest.skip("every candidate op is supported by the shipped list")


def test_warn_once_error_mode_and_report(tmp_path):
    name, fn = _find_unsupported_op()
    saved = opcheck.CHECKER
    report = tmp_path / "ops.json"
    try:
        opcheck.configure(mode="warn", report=str(report))
        opcheck.reset_counts()
        x = torch.rand(4, device="npu")
        with pytest.warns(
            UserWarning,
            match=rf"The operator 'aten::{name}' is not currently supported on the NPU backend and will fall back to run on the CPU",
        ):
            fn(x)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn(x)  # warned once only
        opcheck.CHECKER.write_report()
        rows = {r["op"]: r for r in json.loads(report.read_text())["ops"]}
        assert rows[name]["count"] == 2 and rows[name]["supported"] is False
        assert rows[name]["first_call_site"].startswith(__file__)
        opcheck.configure(mode="error")
        opcheck.reset_counts()
        for _ in range(2):  # refused every time, not only the first
            with pytest.raises(opcheck.NpuOperatorNotSupported, match=rf"aten::{name}"):
                fn(x)
        (x * 2).sum()
        opcheck.CHECKER.report = str(tmp_path / "ops.csv")
        opcheck.CHECKER.write_report()
        rows = list(csv.DictReader(open(tmp_path / "ops.csv")))
        assert rows and rows[0].keys() == {
            "op",
            "count",
            "supported",
            "status",
            "unsupported_dtypes",
            "first_call_site",
        }
        assert {"mul.Tensor", "sum.dim_IntList"} <= {r["op"] for r in rows}
    finally:
        opcheck.CHECKER = saved
        STATE.on_first_call = saved.first_call if saved else None


@pytest.mark.slow
def test_env_configuration_and_exit_report(tmp_path):
    report = tmp_path / "report.csv"
    code = "import torch, torch_npu\nx = torch.rand(4, device='npu')\n(x * 2).sum().item()\n"
    script = tmp_path / "s.py"
    script.write_text(code)
    proc = run_python(
        ["-m", "runtime_shim", str(script)],
        env_extra={
            "RUNTIME_SHIM_OPCHECK": "warn",
            "RUNTIME_SHIM_OPCHECK_REPORT": str(report),
            "RUNTIME_SHIM_RELEASE": "2.7.1",
        },
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["op"]: r for r in csv.DictReader(report.open())}
    assert rows["mul.Tensor"]["supported"] == "True"
    assert rows["mul.Tensor"]["first_call_site"] == f"{script}:3"
    proc = run_python(
        [
            "-c",
            "import runtime_shim, os; runtime_shim.activate(); from runtime_shim.diagnostics import opcheck; print(opcheck.CHECKER.mode)",
        ],
        env_extra={"TORCH_NPU_FALLBACK_CPU_DISABLE": "1"},
    )
    assert proc.stdout.strip() == "error", proc.stderr


def test_structured_ops_follow_their_out_kernel() -> None:
    """torch_npu lists gelu.out and isneginf.out only; their functional/in-place forms run too."""
    from runtime_shim.diagnostics import opcheck

    release = opcheck.load_release("2.12.0")
    for op in ("gelu", "gelu_", "gelu.default", "isneginf", "silu_", "add.Tensor", "add_.Tensor"):
        assert opcheck.is_supported(op, release), op
    for op in ("cholesky_inverse", "cholesky_inverse.default", "linalg_lstsq"):
        assert not opcheck.is_supported(op, release), op


@pytest.fixture
def checker(tmp_path):
    """A fresh warn-mode checker with a report path; the previous one is put back afterwards."""
    saved = opcheck.CHECKER
    checker = opcheck.configure(mode="warn", report=str(tmp_path / "ops.json"))
    opcheck.reset_counts()
    yield checker
    opcheck.CHECKER = saved
    STATE.on_first_call = saved.first_call if saved else None


def _rows(checker):
    return {row["op"]: row for row in checker.rows()}


def test_recurrent_attention_conv_embedding_models_give_no_false_reports(checker, recwarn):
    from models import CASES, train
    from torch import nn

    for case in ("lstm", "transformer", "cnn", "mlp"):
        train(CASES[case], "adamw_foreach", "npu", steps=2)
    gru = nn.GRU(6, 8, num_layers=2, bidirectional=True, dropout=0.1).to("npu")
    gru(torch.randn(4, 3, 6, device="npu"))[0].sum().backward()
    nn.RNN(6, 8, nonlinearity="relu").to("npu")(torch.randn(4, 3, 6, device="npu"))[0].sum().backward()
    nn.LSTMCell(6, 8).to("npu")(torch.randn(3, 6, device="npu"))[0].sum().backward()
    nn.GRUCell(6, 8).to("npu")(torch.randn(3, 6, device="npu")).sum().backward()
    embedding = nn.Embedding(10, 4).to("npu")
    embedding(torch.tensor([[1, 2, 3]], device="npu")).sum().backward()
    q = torch.randn(2, 2, 4, 8, device="npu", requires_grad=True)
    torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.1, is_causal=True).sum().backward()
    rows = _rows(checker)
    assert not [w for w in recwarn.list if "not currently supported" in str(w.message)]
    assert [op for op, row in rows.items() if row["status"] == "unsupported"] == []
    # Seen as torch_npu dispatches them, not as the CPU computes them.
    expected = {
        "lstm.input",
        "gru.input",
        "lstm_cell",
        "_thnn_fused_gru_cell",
        "scaled_dot_product_attention",
    }
    assert expected | {"matmul", "native_dropout"} <= rows.keys()
    assert "bernoulli_.float" not in rows  # dropout's CPU form, not what the NPU runs
    assert "mkldnn_rnn_layer" not in rows
    internal = {op for op, row in rows.items() if row["status"] == "backend_internal"}
    assert internal == {"mkldnn_rnn_layer_backward"} and rows["mkldnn_rnn_layer_backward"]["supported"]


def test_recorded_composites_compute_what_the_cpu_computes(checker):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(3, 4, 5, generator=g), torch.randn(5, 2, generator=g)
    cpu_a, npu_a = a.clone().requires_grad_(), a.to("npu").requires_grad_()
    cpu = torch.matmul(cpu_a, b).softmax(-1)
    npu = torch.matmul(npu_a, b.to("npu")).softmax(-1)
    cpu.sum().backward()
    npu.sum().backward()
    assert torch.equal(cpu, npu.cpu()) and torch.equal(cpu_a.grad, npu_a.grad.cpu())
    assert _rows(checker)["matmul"]["count"] == 1 and "softmax.int" in _rows(checker)


def test_float64_matmul_is_reported_as_an_unsupported_dtype(checker, tmp_path):
    x32 = torch.rand(3, 3, device="npu")
    x64 = torch.rand(3, 3, device="npu", dtype=torch.float64)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x32 @ x32
    with pytest.warns(
        UserWarning, match=r"'aten::matmul' is called with dtype fp64.*documented: bf16 fp16 fp32"
    ):
        x64 @ x64
    x64 @ x64  # warned once per op and dtype
    scale = torch.full((), 2.0**16, device="npu")
    scale.double().reciprocal().float()  # GradScaler's scalar bookkeeping: not reported
    assert "reciprocal" not in checker.bad_dtypes
    row = _rows(checker)["matmul"]
    assert row["count"] == 3 and row["status"] == "unsupported_dtype" and row["unsupported_dtypes"] == "fp64"
    checker.write_report(str(tmp_path / "ops.csv"))
    csv_rows = {r["op"]: r for r in csv.DictReader(open(tmp_path / "ops.csv"))}
    assert csv_rows["matmul"]["status"] == "unsupported_dtype"
    opcheck.configure(mode="error")
    opcheck.reset_counts()
    x32 @ x32
    with pytest.raises(opcheck.NpuOperatorNotSupported, match=r"'aten::matmul' does not support dtype fp64"):
        x64 @ x64
    torch.mm(x32, x32)
    with pytest.raises(opcheck.NpuOperatorNotSupported, match=r"'aten::mm' does not support dtype fp64"):
        torch.mm(x64, x64)


def test_dtype_modes():
    release = opcheck.load_release("2.12.0")
    assert opcheck.documented_dtypes("mm", release) == {"fp16", "fp32"}
    assert opcheck.documented_dtypes("add_.Tensor", release) == opcheck.documented_dtypes("add", release)
    bf16 = (torch.ones(1, dtype=torch.bfloat16),)
    wide = opcheck.OpChecker(release, "warn", None, "wide")
    wide._check_dtype("mm", bf16, release.dtypes["mm"])  # the docs omit bf16 for mm, but it runs
    assert wide.bad_dtypes == {}
    every = opcheck.OpChecker(release, "warn", None, "all")
    with pytest.warns(UserWarning, match="dtype bf16"):
        every._check_dtype("mm", bf16, release.dtypes["mm"])
    with pytest.raises(ValueError, match="RUNTIME_SHIM_OPCHECK_DTYPES=some is not one of: wide, all, off"):
        opcheck.OpChecker(release, "warn", None, "some")
    assert opcheck.OpChecker(release, "warn", None, "off")._dtype_rule("mm") is None
    assert opcheck.OpChecker(release, "off", None, "wide")._dtype_rule("mm") is None  # nothing to report
    assert opcheck.OpChecker(release, "warn", None, "wide")._dtype_rule("mm") == {"fp16", "fp32"}


def test_backend_internal_ops_are_never_unsupported():
    release = opcheck.load_release("2.1.0")
    for op in (
        "mkldnn_rnn_layer",
        "mkldnn_rnn_layer_backward",
        "cudnn_batch_norm",
        "miopen_rnn",
        "_nnpack_spatial_convolution",
        "_scaled_dot_product_flash_attention_for_cpu_backward",
    ):
        assert opcheck.is_backend_internal(op) and opcheck.is_supported(op, release)
    assert not opcheck.is_backend_internal("mm")


_SPAWNING_SCRIPT = """
import sys
import torch
import torch.multiprocessing as mp
import torch_npu


def work(rank):
    x = torch.rand(4, device="npu")
    if rank == 0:
        (x * 2).sum().item()
    else:
        torch.cumsum(x, 0).max().item()


if __name__ == "__main__":
    if sys.argv[1] == "spawn":
        mp.spawn(work, nprocs=2)
    else:
        torch.rand(2, device="npu").neg().sum().item()
"""


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_processes_of_one_run_merge_their_reports_and_a_new_run_replaces_them(tmp_path, suffix):
    script = tmp_path / "spawning.py"
    script.write_text(_SPAWNING_SCRIPT)
    report = tmp_path / f"ops{suffix}"
    env = {"RUNTIME_SHIM_OPCHECK_REPORT": str(report), "RUNTIME_SHIM_OPCHECK": "off"}

    def ops() -> dict[str, dict]:
        if suffix == ".csv":
            return {r["op"]: r for r in csv.DictReader(report.open())}
        return {r["op"]: r for r in json.loads(report.read_text())["ops"]}

    proc = run_python(["-m", "runtime_shim", str(script), "spawn"], env_extra=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    spawned = ops()
    # rank 0's multiplication and rank 1's cumsum both survive; the parent adds nothing
    assert {"mul.Tensor", "cumsum"} <= set(spawned)
    assert "neg" not in spawned
    assert int(spawned["uniform_"]["count"]) >= 2  # one torch.rand per rank, added up
    if suffix == ".json":
        assert len(json.loads(report.read_text())["pids"]) == 3

    proc = run_python(["-m", "runtime_shim", str(script), "single"], env_extra=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    single = ops()
    assert "neg" in single and "cumsum" not in single
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")) == []


def _runs_pytorch_decomposition(name: str) -> bool:
    base, _, overload = name.partition(".")
    return opcheck.runs_decomposition(
        f"aten::{base}" + (f".{overload}" if overload not in ("", "default") else "")
    )


@pytest.mark.parametrize("dispatch_path", ["python", "native"])
def test_configuring_another_release_unwraps_the_ops_it_has_no_kernel_for(dispatch_path):
    from runtime_shim.backend import dispatch

    if dispatch_path == "native" and not dispatch.available():
        pytest.skip("the native part is not built in this process")
    saved, native = opcheck.CHECKER, dispatch.native_enabled()
    try:
        dispatch.set_dispatch(dispatch_path == "native")
        wrapped = {}
        for release in opcheck.available_releases():
            opcheck.configure(release=release, mode="warn")
            wrapped[release] = set(opcheck._NPU_LEVEL_OPS)
        every = set().union(*wrapped.values())
        target = max(wrapped, key=lambda release: len(every - wrapped[release]))
        gone = every - wrapped[target]
        assert gone, "every release wraps the same ops: nothing to prove"
        opcheck.configure(release=target, mode="warn")
        assert wrapped[target] == opcheck._NPU_LEVEL_OPS
        # back to PyTorch's own kernel at the npu's autograd key; the release's ops stay wrapped
        assert all(_runs_pytorch_decomposition(name) for name in gone)
        assert not any(_runs_pytorch_decomposition(name) for name in wrapped[target])
    finally:
        dispatch.set_dispatch(native)
        opcheck.CHECKER = saved
        STATE.on_first_call = saved.first_call if saved else None
        opcheck.install_npu_level_ops(saved.release if saved else opcheck.load_release(None))
        dispatch.rearm()
