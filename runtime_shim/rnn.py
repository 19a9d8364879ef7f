"""LSTM on the simulated npu, taking the same kernel path as on CPU.

``aten::lstm`` picks its implementation from the input's device: on CPU it
runs oneDNN's ``mkldnn_rnn_layer`` per layer; on any other device it builds the
cell from ``_thnn_fused_lstm_cell``, a CUDA kernel with no CPU equivalent. For
an npu input this module routes ``lstm.input`` (at the AutogradPrivateUse1
key, so autograd still records every step) to the CPU sequence of calls:
batch-first transpose, one ``mkldnn_rnn_layer`` per layer and direction,
inter-layer dropout, then stacking the final states. Each of those ops has an
autograd formula and a CPU kernel, so the result and gradients are the CPU ones.
"""

from __future__ import annotations

import torch

_LSTM_MODE = 2  # ideep::rnn_kind::LSTM, the mode number PyTorch passes for LSTM


def _mkldnn_usable(input: torch.Tensor, hx) -> bool:
    return (
        torch.backends.mkldnn.is_available()
        and torch.backends.mkldnn.enabled
        and input.dtype in (torch.float32, torch.bfloat16, torch.float16)
        and input.numel() != 0
        and hx[0].size(2) == hx[1].size(2)  # no projections
    )


def lstm_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
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
            weights = params[index * stride:(index + 1) * stride]
            w_ih, w_hh = weights[0], weights[1]
            if has_biases:
                b_ih, b_hh = weights[2], weights[3]
            else:
                b_ih = torch.zeros(w_ih.size(0), dtype=w_ih.dtype, device=w_ih.device)
                b_hh = torch.zeros(w_hh.size(0), dtype=w_hh.dtype, device=w_hh.device)
            out, h, c, _ = torch.ops.aten.mkldnn_rnn_layer(
                x, w_ih, w_hh, b_ih, b_hh, h0[index], c0[index], direction > 0, [], _LSTM_MODE,
                hidden_size, num_layers, has_biases, bidirectional, batch_first, train,
            )
            outputs.append(out)
            hy.append(h)
            cy.append(c)
        x = outputs[0] if directions == 1 else torch.cat(outputs, -1)
        if dropout != 0 and train and layer < num_layers - 1:
            x = torch.dropout(x, dropout, True)
    output = x.transpose(0, 1) if batch_first else x
    return output, torch.stack(hy, 0), torch.stack(cy, 0)


_library = None


def install() -> None:
    """Register the npu LSTM kernel (once)."""
    global _library
    if _library is None:
        library = torch.library.Library("aten", "IMPL")
        library.impl("lstm.input", lstm_input, "AutogradPrivateUse1")
        _library = library
