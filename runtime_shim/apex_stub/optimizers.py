"""``apex.optimizers``: the NPU fused optimizers of Ascend's apex.

On an NPU they fuse the per-parameter updates into a few kernels; the arithmetic is that
of the PyTorch optimizer of the same name, so they are the classes ``torch_npu.optim``
offers (``NpuFusedLamb``, with no PyTorch counterpart, is LAMB from torch ops there).
"""

from __future__ import annotations

from typing import NoReturn as _NoReturn

from runtime_shim.torch_npu_stub.optim import (
    NpuFusedAdadelta,
    NpuFusedAdam,
    NpuFusedAdamW,
    NpuFusedLamb,
    NpuFusedRMSprop,
    NpuFusedSGD,
)

__all__ = [
    "NpuFusedAdadelta",
    "NpuFusedAdam",
    "NpuFusedAdamW",
    "NpuFusedLamb",
    "NpuFusedRMSprop",
    "NpuFusedSGD",
]


def __getattr__(name: str) -> _NoReturn:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"apex.optimizers.{name} is not simulated by runtime_shim")
