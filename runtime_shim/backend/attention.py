"""Attention and dropout on the npu as on the CPU.

PyTorch picks the attention kernel of a PrivateUse1 device through a C++-only hook and falls
back to the math decomposition, while the CPU uses its fused flash kernel: different rounding.
Asking the CPU's own choice and calling the same kernels keeps the simulated NPU bit-identical.
On the native path the same two routes run in C++ (csrc/npu_attention.cpp), registered over these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from runtime_shim.backend import dispatch, libraries
from runtime_shim.backend.kernels import npu_level

_SDPA_FLASH = 1  # sdp::SDPBackend::flash_attention


def _shape_only(t: torch.Tensor | None) -> torch.Tensor | None:
    """What the CPU's choice reads of t (sizes, strides, dtype, requires_grad), on the CPU: a
    last dimension that is not contiguous makes the CPU take its math kernel."""
    if t is None:
        return None
    empty = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
    return empty.requires_grad_() if t.requires_grad and t.is_floating_point() else empty


def _is_subclass(t: torch.Tensor) -> bool:
    return type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter


def _sdpa_as_on_cpu(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    if (
        attn_mask is None
        and not dropout_p
        and not enable_gqa
        and any(_is_subclass(t) for t in (query, key, value))
    ):
        # DTensor (tensor/sequence parallel attention) shards the flash-attention op, which
        # has no rule for the CPU's flash kernel: call it, and backend/kernels.py computes each shard
        # with that CPU kernel.
        return torch.ops.aten._scaled_dot_product_flash_attention(
            query, key, value, dropout_p, is_causal, scale=scale
        )[0]
    choice = torch.ops.aten._fused_sdp_choice(
        *map(_shape_only, (query, key, value, attn_mask)),
        dropout_p,
        is_causal,
        scale=scale,
        enable_gqa=enable_gqa,
    )
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype, device=query.device).masked_fill_(
            attn_mask.logical_not(), float("-inf")
        )
    if choice == _SDPA_FLASH:
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale
        )[0]
    return torch.ops.aten._scaled_dot_product_attention_math(
        query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale, enable_gqa=enable_gqa
    )[0]


def _dropout_as_on_cpu(input: torch.Tensor, p: float, train: bool) -> torch.Tensor:
    """The CPU's dropout (a bernoulli mask scaled by 1/(1-p)), not the fused kernel PyTorch picks
    for accelerators; the values are the same, and on host kernels it is the faster of the two."""
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        return input * torch.zeros((), dtype=input.dtype, device=input.device)
    noise = torch.empty_like(input).bernoulli_(1 - p)
    noise.div_(1 - p)
    return input * noise


def _dropout_recorded_as_native(
    npu_level: Callable[[str, Callable[..., Any]], Callable[..., Any]],
) -> Callable[[torch.Tensor, float, bool], torch.Tensor]:
    # Where PyTorch would take the fused kernel (training, 0 < p < 1), a real NPU runs
    # torch_npu's native_dropout: the op check records that, not the CPU ops used here.
    fused = npu_level("native_dropout", _dropout_as_on_cpu)

    def dropout(input: torch.Tensor, p: float, train: bool) -> torch.Tensor:
        if train and 0 < p < 1 and input.numel() != 0:
            return fused(input, p, train)
        return _dropout_as_on_cpu(input, p, train)

    return dropout


def install() -> None:
    """Register the CPU's attention and dropout choice for the npu's autograd key (once)."""
    if libraries.get("attention") is None:
        library = libraries.make("attention")
        # torch_npu has its own kernel for it: the op check records it, not the ops run here.
        sdpa = npu_level("scaled_dot_product_attention", _sdpa_as_on_cpu)
        library.impl("scaled_dot_product_attention", sdpa, "AutogradPrivateUse1")
        library.impl("dropout", _dropout_recorded_as_native(npu_level), "AutogradPrivateUse1")
        # the same routes in C++ on the native path (csrc/npu_attention.cpp)
        dispatch.serve_routes("attention")
