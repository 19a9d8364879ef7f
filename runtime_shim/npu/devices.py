"""torch.npu's device API: device count and selection, properties, synchronisation."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

import torch

from runtime_shim.not_simulated import module_getattr as _module_getattr
from runtime_shim.runtime.allocator import MemoryTracker
from runtime_shim.runtime.state import DEVICE_TYPE, STATE


def is_available() -> bool:
    """The simulated device is always available once runtime_shim is active."""
    return True


def is_initialized() -> bool:
    """True: the simulated device needs no lazy initialisation."""
    return STATE.installed


def init() -> None:
    """Accepted for compatibility: initialisation happens at activation."""


def _lazy_init() -> None:
    """Hook some libraries call on device modules; nothing to do here."""


def _is_in_bad_fork() -> bool:
    # The simulated device has no driver state a fork could corrupt.
    return False


def device_count() -> int:
    """Number of simulated devices (RUNTIME_SHIM_DEVICE_COUNT, default 8)."""
    return STATE.device_count


def _index(device: Any = None, *, optional: bool = True) -> int:
    if device is None:
        return STATE.current
    if isinstance(device, int):
        index = device
    else:
        device = torch.device(device)
        if device.type != DEVICE_TYPE:
            raise ValueError(f"Expected a {DEVICE_TYPE} device, but got: {device}")
        index = STATE.current if device.index is None else device.index
    if not 0 <= index < STATE.device_count:
        raise RuntimeError(
            f"Invalid device id {index}: the simulated NPU has {STATE.device_count} devices "
            "(set RUNTIME_SHIM_DEVICE_COUNT to change)"
        )
    return index


def current_device() -> int:
    """Index of the current npu device."""
    return STATE.current


def set_device(device: Any) -> None:
    """Make ``device`` (index, "npu:N" or torch.device) the current npu device."""
    STATE.current = _index(device)


class device:
    """Context manager that changes the current npu device."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self) -> device:
        self.prev_idx = STATE.current
        if self.idx >= 0:
            STATE.current = self.idx
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.current = self.prev_idx


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current."""

    def __init__(self, obj: Any) -> None:
        idx = obj.get_device() if obj.device.type == DEVICE_TYPE else -1
        super().__init__(idx if idx >= 0 else None)


def synchronize(device: Any = None) -> None:
    """Wait for all work on the device: the simulated device is synchronous."""
    _index(device)


def can_device_access_peer(device: Any, peer_device: Any) -> bool:
    """All simulated devices share host memory, so peers are always reachable."""
    _index(device)
    _index(peer_device)
    return True


@dataclass(frozen=True)
class _NPUDeviceProperties:
    name: str
    total_memory: int
    cube_core_num: int = 24
    vector_core_num: int = 48
    L2_cache_size: int = 192 * 1024 * 1024

    def __repr__(self) -> str:
        return (
            f"_NPUDeviceProperties(name='{self.name}', total_memory={self.total_memory // 1024**2}MB, "
            f"cube_core_num={self.cube_core_num}, vector_core_num={self.vector_core_num}, "
            f"L2_cache_size={self.L2_cache_size // 1024**2}MB)"
        )


def get_device_name(device: Any = None) -> str:
    """Name of the simulated device (RUNTIME_SHIM_DEVICE_NAME overrides it)."""
    _index(device)
    return os.environ.get("RUNTIME_SHIM_DEVICE_NAME", "Ascend910B2 (simulated by runtime_shim)")


def get_device_properties(device: Any = None) -> _NPUDeviceProperties:
    """Properties of the simulated device; total_memory is the configured capacity."""
    index = _index(device)
    return _NPUDeviceProperties(get_device_name(index), _tracker().devices[index].capacity)


def get_device_capability(device: Any = None) -> None:
    """torch_npu reports no CUDA-style capability; neither does the simulation."""
    _index(device)
    return None


def _tracker() -> MemoryTracker:
    assert STATE.tracker is not None, "the simulated device is installed before torch.npu is used"
    return STATE.tracker


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu.devices")
