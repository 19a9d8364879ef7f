"""``torch.npu.amp``: autocast and GradScaler for the simulated npu.

``torch.autocast("npu", ...)`` works once the device is installed; the casting
policy applied to npu tensors is the one PyTorch uses for CPU autocast (see
policy.py), so a script autocasting on the simulated npu computes what
the same script autocasting on CPU computes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

import torch

from runtime_shim.not_simulated import module_getattr as _module_getattr

DEVICE_TYPE = "npu"

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


class autocast(torch.amp.autocast_mode.autocast):
    """``torch.npu.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)``."""

    def __init__(
        self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True
    ) -> None:
        super().__init__(DEVICE_TYPE, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """``torch.npu.amp.GradScaler``: PyTorch's GradScaler bound to the npu device."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
        dynamic: bool = True,
    ) -> None:
        if not dynamic:
            raise NotImplementedError(
                "torch.npu.amp.GradScaler(dynamic=False) is not simulated by runtime_shim"
            )
        super().__init__(
            DEVICE_TYPE,
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )


def custom_fwd(fwd: Callable[..., Any] | None = None, *, cast_inputs: Any = None) -> Callable[..., Any]:
    """``torch.npu.amp.custom_fwd``: torch.amp.custom_fwd for the npu device."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return torch.amp.custom_fwd(fwd, device_type=DEVICE_TYPE, cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """``torch.npu.amp.custom_bwd``: torch.amp.custom_bwd for the npu device."""
    if bwd is None:
        return custom_bwd
    return torch.amp.custom_bwd(bwd, device_type=DEVICE_TYPE)


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu.amp")
