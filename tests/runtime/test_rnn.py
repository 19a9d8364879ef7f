"""LSTM, GRU and plain RNN layers and cells on the simulated npu compute exactly what they compute
on the CPU, on both dispatch paths."""

from __future__ import annotations

import copy

import pytest
import torch


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
@pytest.mark.parametrize(
    "layers,bidirectional,batch_first,bias",
    [(1, False, False, True), (2, True, True, True), (2, False, True, False)],
)
def test_recurrent_layers_match_cpu(npu, kind, layers, bidirectional, batch_first, bias) -> None:
    torch.manual_seed(0)
    if kind in ("LSTM", "GRU"):
        layer = getattr(torch.nn, kind)(
            6,
            5,
            num_layers=layers,
            bidirectional=bidirectional,
            batch_first=batch_first,
            bias=bias,
            dropout=0.3 if layers > 1 else 0.0,
        )
    else:
        layer = torch.nn.RNN(
            6,
            5,
            num_layers=layers,
            bidirectional=bidirectional,
            batch_first=batch_first,
            bias=bias,
            nonlinearity="tanh" if kind == "RNN_TANH" else "relu",
        )
    on_npu = copy.deepcopy(layer).to(npu)
    x = torch.randn(4, 7, 6)
    h0 = torch.randn(layers * (2 if bidirectional else 1), 4 if batch_first else 7, 5)
    results = []
    for module, device in ((layer, "cpu"), (on_npu, npu)):
        torch.manual_seed(1)  # same dropout masks
        state = (h0.to(device), (h0 * 0.5).to(device)) if kind == "LSTM" else h0.to(device)
        out, h = module(x.to(device), state)
        if kind == "LSTM":
            h = torch.cat(h)  # the final hidden and cell states
        (out.square().sum() + h.sum()).backward()
        results.append((out.detach().cpu(), h.detach().cpu(), [p.grad.cpu() for p in module.parameters()]))
    (out_c, h_c, g_c), (out_n, h_n, g_n) = results
    assert torch.equal(out_c, out_n) and torch.equal(h_c, h_n)
    assert all(torch.equal(a, b) for a, b in zip(g_c, g_n))


@pytest.mark.parametrize("cls", [torch.nn.GRU, torch.nn.LSTM, torch.nn.RNN])
def test_packed_sequences_raise_a_clear_error(npu, cls) -> None:
    from torch.nn.utils.rnn import pack_padded_sequence

    layer = cls(4, 3).to(npu)
    packed = pack_padded_sequence(torch.randn(5, 2, 4, device=npu), torch.tensor([5, 3]))
    with pytest.raises(NotImplementedError, match="PackedSequence on the simulated npu is not simulated"):
        layer(packed)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_cpu(npu, kind, bias) -> None:
    torch.manual_seed(0)
    cell = getattr(torch.nn, kind)(6, 5, bias=bias)
    on_npu = copy.deepcopy(cell).to(npu)
    x = torch.randn(3, 4, 6)
    h = torch.randn(4, 5)
    state_cpu = (h, h * 0.5) if kind == "LSTMCell" else h
    state_npu = (h.to(npu), (h * 0.5).to(npu)) if kind == "LSTMCell" else h.to(npu)
    for step in range(3):  # a few steps, so the gradient flows back through the recurrence
        state_cpu = cell(x[step], state_cpu)
        state_npu = on_npu(x[step].to(npu), state_npu)
    out_cpu = state_cpu[0] if kind == "LSTMCell" else state_cpu
    out_npu = state_npu[0] if kind == "LSTMCell" else state_npu
    assert torch.equal(out_cpu, out_npu.cpu())
    out_cpu.pow(2).sum().backward()
    out_npu.pow(2).sum().backward()
    for a, b in zip(cell.parameters(), on_npu.parameters()):
        assert torch.equal(a.grad, b.grad.cpu())


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN", "LSTMCell", "GRUCell"])
def test_recurrent_layers_run_under_inference_mode(npu, kind) -> None:
    torch.manual_seed(0)
    layer = getattr(torch.nn, kind)(6, 5)
    on_npu = copy.deepcopy(layer).to(npu)
    x = torch.randn(4, 6) if kind.endswith("Cell") else torch.randn(3, 4, 6)
    with torch.inference_mode():
        expected, got = layer(x), on_npu(x.to(npu))
    expected = expected[0] if isinstance(expected, tuple) else expected
    got = got[0] if isinstance(got, tuple) else got
    assert torch.equal(expected, got.cpu())


def test_the_native_path_runs_the_layers_in_cpp(npu, monkeypatch) -> None:
    from runtime_shim.backend import dispatch, rnn

    if not dispatch.native_enabled():
        pytest.skip("the Python dispatch path replays the cells in Python")

    def replay(*args, **kwargs):
        raise AssertionError("the Python replay ran on the native path")

    class Replayed:  # what the Python kernels compute with: the native path must not touch it
        def __getattr__(self, name):
            raise AssertionError(f"the Python kernel ran on the native path ({name})")

    for helper in ("_run_cells", "_mkldnn_usable", "_gru_cell"):
        monkeypatch.setattr(rnn, helper, replay)
    monkeypatch.setattr(rnn, "F", Replayed())
    torch.manual_seed(0)
    for layer in (
        torch.nn.GRU(6, 5, num_layers=2),
        torch.nn.RNN(6, 5, nonlinearity="relu"),
        torch.nn.RNN(6, 5),
        torch.nn.LSTM(6, 5, num_layers=2, bidirectional=True),
    ):
        out, h = layer.to(npu)(torch.randn(7, 4, 6, device=npu))
        h = h[0] + h[1] if isinstance(h, tuple) else h
        (out.sum() + h.sum()).backward()
    x = torch.randn(4, 6, device=npu)
    h, c = torch.nn.LSTMCell(6, 5).to(npu)(x)
    (h.sum() + c.sum() + torch.nn.GRUCell(6, 5).to(npu)(x).sum()).backward()
