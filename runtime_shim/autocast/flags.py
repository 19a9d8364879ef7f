"""torch.npu's autocast flags (the torch.npu.amp submodule is amp.py beside this file)."""

from __future__ import annotations

import torch

from runtime_shim.runtime.state import DEVICE_TYPE


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Low-precision dtypes autocast accepts on the device."""
    return [torch.float16, torch.bfloat16]


def is_bf16_supported() -> bool:
    """The host kernels support bfloat16."""
    return True


def is_autocast_enabled() -> bool:
    """Whether npu autocast is on."""
    return torch.is_autocast_enabled(DEVICE_TYPE)


def set_autocast_enabled(enabled: bool) -> None:
    """Turn npu autocast on or off."""
    torch.set_autocast_enabled(DEVICE_TYPE, enabled)


def get_autocast_dtype() -> torch.dtype:
    """The npu autocast dtype."""
    return torch.get_autocast_dtype(DEVICE_TYPE)


def set_autocast_dtype(dtype: torch.dtype) -> None:
    """Set the npu autocast dtype."""
    torch.set_autocast_dtype(DEVICE_TYPE, dtype)
