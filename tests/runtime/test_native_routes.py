"""The routes made in C++ on the native path: attention.py's SDPA and dropout (csrc/npu_attention.cpp)
and rnn.py's recurrent layers and cells (csrc/npu_rnn.cpp), registered by csrc/npu_routes.cpp.
Served there while the native path serves, withdrawn with it, and giving the CPU's results and
gradients bit for bit (here and in test_rnn.py) and the operator check's counts, on both paths in
one process."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from test_native_dispatch import path

from runtime_shim.backend import dispatch, native
from runtime_shim.runtime.state import STATE

needs_native = pytest.mark.skipif(
    not dispatch.available(), reason=f"Python path: {native.python_path_reason}"
)
PATHS = ["python", pytest.param("native", marks=needs_native)]
ROUTES = [
    "dropout",
    "gru.input",
    "gru_cell",
    "lstm.input",
    "lstm_cell",
    "rnn_relu.input",
    "rnn_tanh.input",
    "scaled_dot_product_attention",
]


def _routes() -> list[str]:
    return sorted(STATE.native.route_ops())


@needs_native
def test_the_routes_are_native_while_the_native_path_serves():
    with path("native"):
        assert _routes() == ROUTES
        line = next(
            line
            for line in torch._C._dispatch_dump("aten::scaled_dot_product_attention").splitlines()
            if line.startswith("AutogradPrivateUse1:")
        )
        assert "npu_routes.cpp" in line, line
        with path("python"):
            assert _routes() == []
            for op in ("aten::dropout", "aten::lstm.input"):
                line = next(
                    line
                    for line in torch._C._dispatch_dump(op).splitlines()
                    if line.startswith("AutogradPrivateUse1:")
                )
                assert "npu_routes.cpp" not in line, line  # the Python module's own kernel again
        assert _routes() == ROUTES  # back, over the Python kernels


# every branch of the route: the CPU's flash and math kernels, bool and float masks, a mask
# that needs grad, dropout, scale, grouped-query heads, a non-contiguous query
SDPA_CASES = {
    "flash": {},
    "causal": {"is_causal": True},
    "bool mask": {"mask": "bool"},
    "float mask": {"mask": "float"},
    "float mask with grad": {"mask": "grad"},
    "dropout": {"dropout_p": 0.25},
    "scale": {"is_causal": True, "scale": 0.3},
    "gqa": {"enable_gqa": True, "kv_heads": 2},
    "transposed query": {"transposed": True},
    "query strided in its last dim": {"transposed": "last"},  # the CPU takes its math kernel
}


def _sdpa(device: str, case: dict) -> list[torch.Tensor]:
    case = dict(case)
    mask_kind, kv_heads = case.pop("mask", None), case.pop("kv_heads", 4)
    transposed = case.pop("transposed", False)
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 6, 8, generator=g)
    if transposed:
        q = torch.randn(2, 6, 4, 8, generator=g).transpose(1, 2)
    k, v = (torch.randn(2, kv_heads, 6, 8, generator=g) for _ in range(2))
    mask = None
    if mask_kind == "bool":
        mask = torch.rand(6, 6, generator=g) > 0.3
    elif mask_kind is not None:
        mask = torch.randn(6, 6, generator=g)
    leaves = [t.to(device).requires_grad_() for t in (q.contiguous(), k, v)]
    q_in = leaves[0]
    if transposed == "last":
        q_in = q_in.transpose(-1, -2).contiguous().transpose(-1, -2)
    elif transposed:
        q_in = q_in.transpose(1, 2).contiguous().transpose(1, 2)
    if mask is not None:
        mask = mask.to(device)
        if mask_kind == "grad":
            leaves.append(mask.requires_grad_())
    torch.manual_seed(3)
    out = F.scaled_dot_product_attention(q_in, leaves[1], leaves[2], attn_mask=mask, **case)
    out.square().sum().backward()
    return [out.detach().cpu(), *(t.grad.cpu() for t in leaves)]


@pytest.mark.parametrize("name", SDPA_CASES)
@pytest.mark.parametrize("served_by", PATHS)
def test_sdpa_gives_the_cpu_results_and_gradients(served_by, name):
    expected = _sdpa("cpu", SDPA_CASES[name])
    with path(served_by):
        got = _sdpa("npu", SDPA_CASES[name])
    assert len(got) == len(expected)
    for a, b in zip(expected, got, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("served_by", PATHS)
def test_dropout_gives_the_cpu_results_and_gradients(served_by, p):
    def run(device: str) -> list[torch.Tensor]:
        x = torch.randn(40, 24, generator=torch.Generator().manual_seed(1)).to(device).requires_grad_()
        torch.manual_seed(5)
        y = F.dropout(x, p, training=True)
        y.square().sum().backward()
        return [y.detach().cpu(), x.grad.cpu(), F.dropout(x, p, training=False).detach().cpu()]

    expected = run("cpu")
    with path(served_by):
        got = run("npu")
    for a, b in zip(expected, got, strict=True):
        assert torch.equal(a, b)


def _counts(names: tuple[str, ...]) -> dict[str, int]:
    if dispatch.available():
        STATE.native.flush_counts()
    return {name: STATE.op_counts.get(name, [0])[0] for name in names}


@pytest.mark.parametrize("served_by", PATHS)
def test_the_routes_count_what_a_real_npu_runs(served_by):
    # a fused dropout is torch_npu's native_dropout; what the simulation computes it with
    # (bernoulli_, the CPU's attention kernels) is not an op of the script
    names = ("native_dropout", "bernoulli_.float", "_scaled_dot_product_flash_attention_for_cpu")
    x = torch.randn(8, 8, device="npu")
    with path(served_by):
        before = _counts(names)
        for _ in range(3):
            F.dropout(x, 0.5, training=True)
        F.dropout(x, 0.5, training=False)  # not fused: nothing to count
        F.dropout(x, 0.0, training=True)
        q = torch.randn(1, 2, 4, 8, device="npu")
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)  # its dropout is inside it
        after = _counts(names)
    assert {name: after[name] - before[name] for name in names} == {
        "native_dropout": 3,
        "bernoulli_.float": 0,
        "_scaled_dot_product_flash_attention_for_cpu": 0,
    }


@pytest.mark.parametrize("served_by", PATHS)
def test_the_recurrent_routes_count_what_a_real_npu_runs(served_by):
    # LSTM, GRU and the cells are torch_npu's own ops: counted once per call, and what the
    # simulation computes them with is not; RNN decomposes on a real NPU too, so its ops count
    names = ("lstm.input", "gru.input", "lstm_cell", "_thnn_fused_gru_cell", "mkldnn_rnn_layer", "relu")
    x = torch.randn(5, 2, 4, device="npu")
    with path(served_by):
        before = _counts(names)
        for _ in range(2):
            torch.nn.LSTM(4, 3, num_layers=2).to("npu")(x)
        torch.nn.GRU(4, 3).to("npu")(x)
        torch.nn.LSTMCell(4, 3).to("npu")(x[0])
        torch.nn.GRUCell(4, 3).to("npu")(x[0])
        with torch.inference_mode():  # served at the npu's backend key: counted the same
            torch.nn.GRU(4, 3).to("npu")(x)
        torch.nn.RNN(4, 3, nonlinearity="relu").to("npu")(x)  # one relu per step
        after = _counts(names)
    assert {name: after[name] - before[name] for name in names} == {
        "lstm.input": 2,
        "gru.input": 2,
        "lstm_cell": 1,
        "_thnn_fused_gru_cell": 1,
        "mkldnn_rnn_layer": 0,
        "relu": 5,
    }


@needs_native
def test_registering_the_routes_prints_no_override_warning():
    # the routes override the Python kernels on purpose: PyTorch's warning is not for the user
    code = (
        "import runtime_shim, torch; runtime_shim.activate(); "
        "torch.nn.LSTM(3, 3).to('npu')(torch.randn(2, 1, 3, device='npu'))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Overriding a previously registered kernel" not in proc.stderr, proc.stderr
