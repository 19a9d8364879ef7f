"""torch_npu's fused operators that ported Ascend code calls, as compositions of torch operators.

Each follows the semantics torch_npu documents for it (arguments, defaults, returned tuples,
the dtype of each output); on the simulated device it runs as the torch operators below, so
autograd, the operator check and the step recorder see ordinary operators. Being compositions,
they match a real NPU's results up to the fused kernel's rounding, not bit for bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

import torch

from runtime_shim.not_simulated import module_getattr as _module_getattr

_ROTARY_MODES = ("half", "interleave")


def npu_rms_norm(
    self: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm over the trailing dimensions `gamma` covers: ``(y, rstd)``, ``y`` in the input's
    dtype, ``rstd`` (the reciprocal root mean square, kept for the backward pass) in float32 with
    those dimensions kept as size 1."""
    if self.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"npu_rms_norm: input dtype {self.dtype} is not float16, bfloat16 or float32")
    if gamma.dim() > self.dim() or tuple(self.shape[self.dim() - gamma.dim() :]) != tuple(gamma.shape):
        raise ValueError(
            f"npu_rms_norm: gamma of shape {tuple(gamma.shape)} is not the trailing shape of the input "
            f"{tuple(self.shape)}"
        )
    dims = tuple(range(self.dim() - gamma.dim(), self.dim()))
    x = self.float()
    rstd = torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    y = (x * rstd * gamma.float()).to(self.dtype)
    return y, rstd


def _rotary_shapes(x: tuple[int, ...]) -> set[tuple[int, ...]]:
    """The shapes torch_npu documents for r1 and r2 given the input's: its own, or with axes of
    size 1 as the layouts allow (BNSD: 11SD, B1SD; BSND: 1S1D, BS1D; SBND: S11D, SB1D)."""
    a, b, c, d = x
    return {x, (1, 1, c, d), (a, 1, c, d), (1, b, 1, d), (a, b, 1, d), (a, 1, 1, d)}


def npu_rotary_mul(
    input: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor, rotary_mode: str = "half"
) -> torch.Tensor:
    """Rotary position embedding: ``r1 * input + r2 * rotated``, the last dimension rotated by
    halves (``half``: ``[-x2, x1]``) or by pairs (``interleave``: ``(-x_odd, x_even)`` each).

    What torch_npu documents of the operands is checked, so that code relying on broadcasting the
    kernel does not do fails here too: all three of 4 dimensions and one dtype (float16, bfloat16
    or float32), an even last dimension, r1 and r2 of a documented shape for the input's layout."""
    if rotary_mode not in _ROTARY_MODES:
        raise ValueError(
            f"npu_rotary_mul: rotary_mode must be one of {', '.join(_ROTARY_MODES)}, not {rotary_mode!r}"
        )
    for name, t in (("input", input), ("r1", r1), ("r2", r2)):
        if t.dim() != 4:
            raise ValueError(f"npu_rotary_mul: {name} has {t.dim()} dimensions, not the 4 torch_npu requires")
        if t.dtype != input.dtype or t.dtype not in (torch.float16, torch.bfloat16, torch.float32):
            raise TypeError(
                f"npu_rotary_mul: input, r1 and r2 must share one dtype of float16, bfloat16 or float32, "
                f"not {input.dtype}, {r1.dtype}, {r2.dtype}"
            )
    if input.shape[-1] % 2:
        raise ValueError(f"npu_rotary_mul: the last dimension ({input.shape[-1]}) must be even")
    allowed = _rotary_shapes(tuple(input.shape))
    for name, t in (("r1", r1), ("r2", r2)):
        if tuple(t.shape) not in allowed:
            raise ValueError(
                f"npu_rotary_mul: {name} of shape {tuple(t.shape)} is none of the shapes torch_npu documents "
                f"for an input of shape {tuple(input.shape)} (BNSD: 11SD, B1SD, BNSD; BSND: 1S1D, BS1D, "
                "BSND; SBND: S11D, SB1D, SBND)"
            )
    if rotary_mode == "half":
        first, second = torch.chunk(input, 2, dim=-1)
        rotated = torch.cat((-second, first), dim=-1)
    else:
        even, odd = input[..., ::2], input[..., 1::2]
        rotated = torch.stack((-odd, even), dim=-1).flatten(-2)
    return r1 * input + r2 * rotated


def npu_swiglu(input: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """SwiGLU: the input split in two halves along `dim`, ``silu(first) * second``."""
    if input.shape[dim] % 2:
        raise ValueError(
            f"npu_swiglu: dimension {dim} of size {input.shape[dim]} does not split in two halves"
        )
    first, second = torch.chunk(input, 2, dim=dim)
    return torch.nn.functional.silu(first) * second


def npu_confusion_transpose(
    self: torch.Tensor, perm: list[int], shape: list[int], transpose_first: bool
) -> torch.Tensor:
    """A permutation and a reshape in one: permuted then reshaped when `transpose_first`, else
    reshaped then permuted."""
    if transpose_first:
        return self.permute(*perm).reshape(shape)
    return self.reshape(shape).permute(*perm)


def npu_apply_adam_w(
    beta1_power: float,
    beta2_power: float,
    lr: float,
    weight_decay: float,
    beta1: float,
    beta2: float,
    epsilon: float,
    grad: torch.Tensor,
    max_grad_norm: torch.Tensor | None = None,
    amsgrad: bool | None = False,
    maximize: bool | None = False,
    *,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | list[torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One AdamW step on ``out = (var, m, v)``, updated in place and returned.

    `beta1_power` and `beta2_power` are the powers *before* this step (the kernel multiplies them
    by `beta1` and `beta2` once more for the bias corrections), so passing ``beta ** (t - 1)`` at
    step t gives ``torch.optim.AdamW``'s update; `max_grad_norm` (amsgrad) is the running maximum of
    ``v`` the caller keeps, read and not written."""
    if out is None:
        raise NotImplementedError(
            "torch_npu.npu_apply_adam_w without out=(var, m, v) is not simulated by runtime_shim"
        )
    if len(out) != 3:
        raise ValueError(f"npu_apply_adam_w: out must hold (var, m, v), not {len(out)} tensors")
    var, m, v = out
    if amsgrad and max_grad_norm is None:
        raise ValueError("npu_apply_adam_w: amsgrad=True needs max_grad_norm")
    with torch.no_grad():
        g = -grad if maximize else grad
        var.mul_(1.0 - lr * weight_decay)
        m.mul_(beta1).add_(g, alpha=1.0 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
        second = torch.maximum(max_grad_norm, v) if amsgrad and max_grad_norm is not None else v
        denom = (second / (1.0 - beta2_power * beta2)).sqrt().add_(epsilon)
        var.addcdiv_(m, denom, value=-lr / (1.0 - beta1_power * beta1))
    return var, m, v


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch_npu.fused_ops")
