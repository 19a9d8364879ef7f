"""``torch_npu.optim``: the NPU fused optimizers, as the PyTorch optimizers they compute.

On an NPU these fuse the per-parameter updates into a few kernels; the arithmetic is that of
the PyTorch optimizer of the same name, which is what runs on the simulated device.
``NpuFusedLamb`` has no PyTorch counterpart: it is LAMB computed from torch ops. apex.optimizers
(runtime_shim.apex_stub) offers the same classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

import torch

from runtime_shim.not_simulated import module_getattr as _module_getattr

__all__ = [
    "NpuFusedAdadelta",
    "NpuFusedAdam",
    "NpuFusedAdamW",
    "NpuFusedLamb",
    "NpuFusedRMSprop",
    "NpuFusedSGD",
]


class NpuFusedSGD(torch.optim.SGD):
    pass


class NpuFusedAdam(torch.optim.Adam):
    pass


class NpuFusedAdamW(torch.optim.AdamW):
    pass


class NpuFusedAdadelta(torch.optim.Adadelta):
    pass


class NpuFusedRMSprop(torch.optim.RMSprop):
    pass


class NpuFusedLamb(torch.optim.Optimizer):
    """LAMB (You et al., 2019): an Adam step rescaled per parameter by the trust ratio
    ``clamp(|w|, 0, 10) / |adam_step|``; ``adam=True`` drops the rescaling."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        adam: bool = False,
        use_global_grad_norm: bool = False,
    ) -> None:
        if use_global_grad_norm:
            raise NotImplementedError(
                "NpuFusedLamb(use_global_grad_norm=True) is not simulated by runtime_shim"
            )
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"Invalid beta parameters: {betas}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        self.adam = adam
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One LAMB update of every parameter with a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if grad.is_sparse:
                    raise RuntimeError("NpuFusedLamb does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                weight_norm = p.norm(p=2).clamp(0, 10)
                adam_step = exp_avg / exp_avg_sq.sqrt().add(group["eps"])
                if group["weight_decay"] != 0:
                    adam_step.add_(p, alpha=group["weight_decay"])
                adam_norm = adam_step.norm(p=2)
                if self.adam:
                    trust_ratio = torch.ones_like(adam_norm)
                else:
                    # 1 where either norm is zero, as LAMB defines it for fresh or dead layers.
                    usable = (weight_norm > 0) & (adam_norm > 0)
                    trust_ratio = torch.where(usable, weight_norm / adam_norm, torch.ones_like(adam_norm))
                state["trust_ratio"] = trust_ratio
                p.add_(adam_step * trust_ratio, alpha=-group["lr"])
        return loss


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch_npu.optim")
