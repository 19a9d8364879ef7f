"""``torch_npu.npu_fusion_attention`` simulated with the CPU's scaled-dot-product attention.

torch_npu's fused attention computes ``softmax(mask(scale * q @ k^T)) @ v`` (with dropout of
``1 - keep_prob``) for the layouts BSH, SBH, BSND, BNSD and TND (packed variable-length
sequences). Here the inputs are viewed as BNSD and handed to
``torch.nn.functional.scaled_dot_product_attention``, which is what the simulated device
computes attention with (so an attention the model runs through transformers' NPU
flash-attention path equals the same attention through SDPA on the CPU). Masks follow
torch_npu's ``sparse_mode``: 0 (``atten_mask`` as given, True = masked out, with the
``pre_tockens``/``next_tockens`` band), 1 (``atten_mask`` as given), 2 (causal aligned top-left)
and 3 (causal aligned bottom-right); modes 2 and 3 ignore the compressed 2048x2048 mask's
contents as torch_npu does. Not simulated, with a NotImplementedError that says so: ``pse``,
``padding_mask``, ``prefix``, other sparse modes, and an explicit mask with TND.

Outputs are torch_npu's seven: the attention, ``softmax_max`` and ``softmax_sum`` (row max and
sum of ``exp(score - max)`` in float32, repeated 8 times on the last axis as torch_npu stores
them), an empty ``softmax_out`` (reserved there too), and ``seed``, ``offset``, ``numels`` of the
dropout mask: the simulated dropout draws from the host generator, so seed and offset are 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

import torch
import torch.nn.functional as F

from runtime_shim.not_simulated import module_getattr as _module_getattr

_NO_BAND = 2147483647
_LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")
_STAT_WIDTH = 8


def _not_simulated(what: str) -> NotImplementedError:
    return NotImplementedError(f"torch_npu.npu_fusion_attention: {what} is not simulated by runtime_shim")


def _to_bnsd(t: torch.Tensor, layout: str, head_dim: int) -> torch.Tensor:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        batch, seq, hidden = t.shape
        return t.view(batch, seq, hidden // head_dim, head_dim).transpose(1, 2)
    seq, batch, hidden = t.shape  # SBH
    return t.view(seq, batch, hidden // head_dim, head_dim).permute(1, 2, 0, 3)


def _from_bnsd(t: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    batch, heads, seq, dim = t.shape
    if layout == "BSH":
        return t.transpose(1, 2).reshape(batch, seq, heads * dim)
    return t.permute(2, 0, 1, 3).reshape(seq, batch, heads * dim)  # SBH


def _allowed(
    q_len: int,
    kv_len: int,
    atten_mask: torch.Tensor | None,
    sparse_mode: int,
    pre_tockens: int,
    next_tockens: int,
    device: torch.device,
) -> tuple[torch.Tensor | None, bool]:
    """SDPA's boolean mask (True = attend) and is_causal for one attention of q_len x kv_len."""
    if sparse_mode == 2 or (sparse_mode == 3 and q_len == kv_len):
        return None, True
    if sparse_mode == 3:
        ones = torch.ones(q_len, kv_len, dtype=torch.bool, device=device)
        return torch.tril(ones, diagonal=kv_len - q_len), False
    allowed = None if atten_mask is None else ~atten_mask.to(torch.bool)
    if sparse_mode == 0 and (pre_tockens < _NO_BAND or next_tockens < _NO_BAND):
        ones = torch.ones(q_len, kv_len, dtype=torch.bool, device=device)
        band = torch.tril(ones, diagonal=next_tockens) & torch.triu(ones, diagonal=-pre_tockens)
        allowed = band if allowed is None else allowed & band
    return allowed, False


def _softmax_stats(
    q: torch.Tensor, k: torch.Tensor, allowed: torch.Tensor | None, causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Row max and row sum of exp(score - max) of the masked scores, float32, torch_npu's shape."""
    with torch.no_grad():
        if k.shape[1] != q.shape[1]:
            k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        scores = torch.matmul(q.float(), k.float().transpose(-2, -1)) * scale
        if causal:
            ones = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device)
            allowed = torch.tril(ones)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        row_max = scores.amax(dim=-1, keepdim=True)
        row_sum = torch.exp(scores - row_max).sum(dim=-1, keepdim=True)
    shape = (*row_max.shape[:-1], _STAT_WIDTH)
    return row_max.expand(shape).contiguous(), row_sum.expand(shape).contiguous()


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None,
    causal: bool,
    scale: float,
    keep_prob: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    out = F.scaled_dot_product_attention(
        q,
        k,
        v,
        attn_mask=allowed,
        dropout_p=1.0 - keep_prob,
        is_causal=causal,
        scale=scale,
        enable_gqa=k.shape[1] != q.shape[1],
    )
    row_max, row_sum = _softmax_stats(q, k, allowed, causal, scale)
    return out, row_max, row_sum


def _varlen(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    allowed_args: tuple[int, int, int],
    scale: float,
    keep_prob: float,
    q_ends: list[int],
    kv_ends: list[int],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """TND: each packed sequence attends on its own (sequence i is rows q_ends[i-1]:q_ends[i])."""
    if len(q_ends) != len(kv_ends):
        raise ValueError(
            "torch_npu.npu_fusion_attention: actual_seq_qlen and actual_seq_kvlen differ in length"
        )
    outs, maxes, sums = [], [], []
    q_start = kv_start = 0
    for q_end, kv_end in zip(q_ends, kv_ends):
        q = query[q_start:q_end].transpose(0, 1).unsqueeze(0)
        k = key[kv_start:kv_end].transpose(0, 1).unsqueeze(0)
        v = value[kv_start:kv_end].transpose(0, 1).unsqueeze(0)
        allowed, causal = _allowed(q_end - q_start, kv_end - kv_start, None, *allowed_args, query.device)
        out, row_max, row_sum = _attend(q, k, v, allowed, causal, scale, keep_prob)
        outs.append(out.squeeze(0).transpose(0, 1))
        maxes.append(row_max.squeeze(0).transpose(0, 1))
        sums.append(row_sum.squeeze(0).transpose(0, 1))
        q_start, kv_start = q_end, kv_end
    return torch.cat(outs), torch.cat(maxes), torch.cat(sums)


def npu_fusion_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    head_num: int,
    input_layout: str,
    pse: torch.Tensor | None = None,
    padding_mask: torch.Tensor | None = None,
    atten_mask: torch.Tensor | None = None,
    scale: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = _NO_BAND,
    next_tockens: int = _NO_BAND,
    inner_precise: int = 0,
    prefix: list[int] | None = None,
    actual_seq_qlen: list[int] | tuple[int, ...] | None = None,
    actual_seq_kvlen: list[int] | tuple[int, ...] | None = None,
    sparse_mode: int = 0,
    gen_mask_parallel: bool = True,
    sync: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int, int, int]:
    """torch_npu's fused attention through SDPA; see the module docstring for what is simulated."""
    if input_layout not in _LAYOUTS:
        raise ValueError(
            f"torch_npu.npu_fusion_attention: input_layout {input_layout!r} is not one of {', '.join(_LAYOUTS)}"
        )
    rank = 4 if input_layout in ("BSND", "BNSD") else 3
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() != rank:
            raise ValueError(
                f"torch_npu.npu_fusion_attention: {name} has {t.dim()} dimensions, not the {rank} of "
                f"layout {input_layout}"
            )
    if pse is not None:
        raise _not_simulated("pse")
    if padding_mask is not None:
        raise _not_simulated("padding_mask")
    if prefix is not None:
        raise _not_simulated("prefix")
    if sparse_mode not in (0, 1, 2, 3):
        raise _not_simulated(f"sparse_mode={sparse_mode}")
    if input_layout == "TND":
        if actual_seq_qlen is None or actual_seq_kvlen is None:
            raise ValueError("torch_npu.npu_fusion_attention: TND needs actual_seq_qlen and actual_seq_kvlen")
        if atten_mask is not None and sparse_mode not in (2, 3):
            raise _not_simulated("an explicit atten_mask with input_layout TND")
        out, row_max, row_sum = _varlen(
            query,
            key,
            value,
            (sparse_mode, pre_tockens, next_tockens),
            scale,
            keep_prob,
            [int(n) for n in actual_seq_qlen],
            [int(n) for n in actual_seq_kvlen],
        )
    else:
        head_dim = query.shape[-1] // head_num if input_layout in ("BSH", "SBH") else query.shape[-1]
        q, k, v = (_to_bnsd(t, input_layout, head_dim) for t in (query, key, value))
        allowed, causal = _allowed(
            q.shape[2], k.shape[2], atten_mask, sparse_mode, pre_tockens, next_tockens, query.device
        )
        out, row_max, row_sum = _attend(q, k, v, allowed, causal, scale, keep_prob)
        out = _from_bnsd(out, input_layout)
    numels = 0
    if keep_prob < 1.0:
        numels = row_max.numel() // _STAT_WIDTH * (key.shape[0] if input_layout == "TND" else k.shape[2])
    softmax_out = torch.empty(0, dtype=query.dtype, device=query.device)
    return out, row_max, row_sum, softmax_out, 0, 0, numels


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch_npu.fusion_attention")
