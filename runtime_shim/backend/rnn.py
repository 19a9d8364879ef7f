"""LSTM, GRU and plain RNN on the simulated npu, taking the same kernel path as on CPU.

``aten::lstm`` picks its implementation from the input's device: on CPU it
runs oneDNN's ``mkldnn_rnn_layer`` per layer; on any other device it builds the
cell from ``_thnn_fused_lstm_cell``, a CUDA kernel with no CPU equivalent. For
an npu input this module routes ``lstm.input`` (at the AutogradPrivateUse1
key, so autograd still records every step) to the CPU sequence of calls:
batch-first transpose, one ``mkldnn_rnn_layer`` per layer and direction,
inter-layer dropout, then stacking the final states. Each of those ops has an
autograd formula and a CPU kernel, so the result and gradients are the CPU ones.

GRU and RNN (tanh / relu) likewise pick a fused CUDA cell off the CPU. On the CPU they run
the unfused cells over inputs whose projection is computed once for the whole sequence;
``gru_input`` and ``rnn_input`` replay that sequence of ops on npu tensors. ``lstm_cell`` and
``gru_cell`` (nn.LSTMCell, nn.GRUCell) also pick the fused CUDA cell; here they run the CPU's.

On the native dispatch path every kernel here runs in C++ (csrc/npu_rnn.cpp: the same calls in
the same order, counted the same way), registered over these while that path serves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import torch
import torch.nn.functional as F
from torch import Tensor

from runtime_shim.backend import dispatch, libraries

#: one recurrent step: (input projection, hidden, w_hh, b_hh) -> the new hidden state
_Cell = Callable[[Tensor, Tensor, Tensor, Tensor | None], Tensor]
_LSTM_MODE = 2  # ideep::rnn_kind::LSTM, the mode number PyTorch passes for LSTM


def _mkldnn_usable(input: torch.Tensor, hx: Sequence[Tensor]) -> bool:
    return bool(
        torch.backends.mkldnn.is_available()
        and torch.backends.mkldnn.enabled
        and input.dtype in (torch.float32, torch.bfloat16, torch.float16)
        and input.numel() != 0
        and hx[0].size(2) == hx[1].size(2)  # no projections
    )


def lstm_input(
    input: Tensor,
    hx: Any,
    params: Sequence[Tensor],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> tuple[Tensor, ...]:
    """``aten::lstm.input`` for npu tensors, following the CPU (oneDNN) implementation."""
    if not _mkldnn_usable(input, hx):
        raise NotImplementedError(
            "torch.nn.LSTM on the simulated npu needs oneDNN-eligible input (float32/bfloat16/float16, "
            "no proj_size); this configuration is not simulated by runtime_shim"
        )
    directions = 2 if bidirectional else 1
    stride = 4 if has_biases else 2
    hidden_size = hx[0].size(2)
    x = input.transpose(0, 1) if batch_first else input
    x = x.contiguous()
    h0 = hx[0].contiguous()
    c0 = hx[1].contiguous()
    hy, cy = [], []
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            weights = params[index * stride : (index + 1) * stride]
            w_ih, w_hh = weights[0], weights[1]
            if has_biases:
                b_ih, b_hh = weights[2], weights[3]
            else:
                b_ih = torch.zeros(w_ih.size(0), dtype=w_ih.dtype, device=w_ih.device)
                b_hh = torch.zeros(w_hh.size(0), dtype=w_hh.dtype, device=w_hh.device)
            out, h, c, _ = torch.ops.aten.mkldnn_rnn_layer(
                x,
                w_ih,
                w_hh,
                b_ih,
                b_hh,
                h0[index],
                c0[index],
                direction > 0,
                [],
                _LSTM_MODE,
                hidden_size,
                num_layers,
                has_biases,
                bidirectional,
                batch_first,
                train,
            )
            outputs.append(out)
            hy.append(h)
            cy.append(c)
        x = outputs[0] if directions == 1 else torch.cat(outputs, -1)
        if dropout != 0 and train and layer < num_layers - 1:
            x = torch.dropout(x, dropout, True)
    output = x.transpose(0, 1) if batch_first else x
    return output, torch.stack(hy, 0), torch.stack(cy, 0)


def _gru_cell(igates: Tensor, hidden: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    i_r, i_z, i_n = igates.unsafe_chunk(3, 1)
    h_r, h_z, h_n = F.linear(hidden, w_hh, b_hh).unsafe_chunk(3, 1)
    reset = h_r.add_(i_r).sigmoid_()
    update = h_z.add_(i_z).sigmoid_()
    new = i_n.add(h_n.mul_(reset)).tanh_()
    return (hidden - new).mul_(update).add_(new)


def _simple_cell(nonlinearity: Callable[[Tensor], Tensor]) -> _Cell:
    def cell(igates: Tensor, hidden: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
        return nonlinearity(F.linear(hidden, w_hh, b_hh).add_(igates))

    return cell


def _layer(
    cell: _Cell,
    x: Tensor,
    hidden: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None,
    b_hh: Tensor | None,
    reverse: bool,
) -> tuple[Tensor, Tensor]:
    steps = F.linear(x, w_ih, b_ih).unbind(0)  # the CPU projects the whole sequence at once
    if reverse:
        steps = steps[::-1]
    outputs = []
    for step in steps:
        hidden = cell(step, hidden, w_hh, b_hh)
        outputs.append(hidden)
    if reverse:
        outputs.reverse()
    return torch.stack(outputs, 0), hidden


def _run_cells(
    cell: _Cell,
    input: Tensor,
    hx: Any,
    params: Sequence[Tensor],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> tuple[Tensor, Tensor]:
    directions = 2 if bidirectional else 1
    stride = 4 if has_biases else 2
    x = input.transpose(0, 1) if batch_first else input
    hiddens = hx.unbind(0)
    finals = []
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            weights = params[index * stride : (index + 1) * stride]
            b_ih, b_hh = (weights[2], weights[3]) if has_biases else (None, None)
            out, h = _layer(cell, x, hiddens[index], weights[0], weights[1], b_ih, b_hh, direction > 0)
            outputs.append(out)
            finals.append(h)
        x = outputs[0] if directions == 1 else torch.cat(outputs, outputs[0].dim() - 1)
        if dropout != 0 and train and layer < num_layers - 1:
            x = torch.dropout(x, dropout, True)
    output = x.transpose(0, 1) if batch_first else x
    return output, torch.stack(finals, 0)


def _cells_kernel(cell: _Cell) -> Callable[..., tuple[Tensor, Tensor]]:
    """The kernel of ``aten::{gru,rnn_tanh,rnn_relu}.input`` for npu tensors, following the CPU
    implementation: ``_run_cells`` with ``cell``."""

    def kernel(input: Tensor, hx: Tensor, params: Sequence[Tensor], *flags: Any) -> tuple[Tensor, Tensor]:
        # flags: has_biases, num_layers, dropout, train, bidirectional, batch_first
        return _run_cells(cell, input, hx, params, *flags)

    return kernel


gru_input = _cells_kernel(_gru_cell)
rnn_tanh_input = _cells_kernel(_simple_cell(torch.tanh))
rnn_relu_input = _cells_kernel(_simple_cell(torch.relu))


def lstm_cell(
    input: Tensor,
    hx: Sequence[Tensor],
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """``aten::lstm_cell`` for npu tensors: the CPU's unfused cell (off the CPU, PyTorch
    would call the fused CUDA cell, which has no CPU kernel)."""
    gates = F.linear(hx[0], w_hh, b_hh).add_(F.linear(input, w_ih, b_ih))
    ingate, forgetgate, cellgate, outgate = gates.unsafe_chunk(4, 1)
    ingate = ingate.sigmoid_()
    forgetgate = forgetgate.sigmoid_()
    cellgate = cellgate.tanh_()
    outgate = outgate.sigmoid_()
    cy = (forgetgate * hx[1]).add_(ingate * cellgate)
    return outgate * cy.tanh(), cy


def gru_cell(
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """``aten::gru_cell`` for npu tensors: the CPU's unfused cell."""
    return _gru_cell(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def _packed_not_simulated(kind: str) -> Callable[..., NoReturn]:
    def kernel(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(
            f"torch.nn.{kind} with a PackedSequence on the simulated npu is not simulated by runtime_shim; "
            "pad the batch instead (pad_packed_sequence) or run this layer on the CPU"
        )

    return kernel


def install() -> None:
    """Register the npu LSTM, GRU and RNN kernels (once)."""
    if libraries.get("rnn") is None:
        from runtime_shim.backend.kernels import npu_level

        library = libraries.make("rnn")
        kernels = (
            # torch_npu has kernels for these: the op check sees them, not the CPU ops they run as here.
            ("lstm.input", npu_level("lstm.input", lstm_input)),
            ("gru.input", npu_level("gru.input", gru_input)),
            ("lstm_cell", npu_level("lstm_cell", lstm_cell)),
            # gru_cell decomposes on a real NPU into the fused cell torch_npu has a kernel for.
            ("gru_cell", npu_level("_thnn_fused_gru_cell", gru_cell)),
            # These decompose on a real NPU too, into the linear and activation ops run here.
            ("rnn_tanh.input", rnn_tanh_input),
            ("rnn_relu.input", rnn_relu_input),
        )
        for op, kernel in kernels:
            # The autograd key records every step for backward; the backend key serves
            # inference_mode, where autograd keys are skipped.
            library.impl(op, kernel, "AutogradPrivateUse1")
            library.impl(op, kernel, "PrivateUse1")
        for op, kind in (
            ("lstm.data", "LSTM"),
            ("gru.data", "GRU"),
            ("rnn_tanh.data", "RNN"),
            ("rnn_relu.data", "RNN"),
        ):
            library.impl(op, _packed_not_simulated(kind), "AutogradPrivateUse1")
        dispatch.serve_routes("rnn")  # the same kernels in C++ on the native path
