"""``apex.optimizers``: the NPU fused optimizers of Ascend's apex.

On an NPU they fuse the per-parameter updates into a few kernels; the arithmetic is that
of the PyTorch optimizer of the same name, so they are the classes ``torch_npu.optim``
offers (``NpuFusedLamb``, with no PyTorch counterpart, is LAMB from torch ops there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from runtime_shim.not_simulated import module_getattr as _module_getattr
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


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("apex.optimizers")
