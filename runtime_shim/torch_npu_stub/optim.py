"""``torch_npu.optim``: the NPU fused optimizers, as the PyTorch optimizers they compute.

On an NPU these fuse the per-parameter updates into a few kernels; the arithmetic is that of
the PyTorch optimizer of the same name, which is what runs on the simulated device.
"""

from __future__ import annotations

import torch

__all__ = ["NpuFusedAdadelta", "NpuFusedAdam", "NpuFusedAdamW", "NpuFusedRMSprop", "NpuFusedSGD"]


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


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)  # the import system probes __path__ and the like
    raise NotImplementedError(f"torch_npu.optim.{name} is not simulated by runtime_shim")
