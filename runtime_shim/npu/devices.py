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


def _resolve(device: Any) -> int:
    """The index ``device`` names, by torch's ``_get_device_index`` rules for the npu (optional=True).

    An int as is (negative too: each caller decides what that means), ``"npu:1"`` or
    ``torch.device("npu", 1)``, a ``torch.npu.device`` context object (its index), and ``None`` or an
    npu device without an index: the current device.
    """
    if device is None:
        return STATE.current
    if isinstance(device, _DeviceContext):
        return device.idx
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != DEVICE_TYPE:
            raise ValueError(f"Expected a {DEVICE_TYPE} device, but got: {device}")
        return STATE.current if device.index is None else device.index
    raise TypeError(
        f"Expected an npu device (an index, 'npu:N', torch.device or torch.npu.device), but got: {device!r}"
    )


def _check_range(index: int) -> int:
    if not 0 <= index < STATE.device_count:
        raise RuntimeError(
            f"Invalid device id {index}: the simulated NPU has {STATE.device_count} devices "
            "(set RUNTIME_SHIM_DEVICE_COUNT to change)"
        )
    return index


def _index(device: Any = None) -> int:
    """The index ``device`` names (see :func:`_resolve`), which must be one of the simulated devices."""
    return _check_range(_resolve(device))


def _index_or_current(device: Any) -> int:
    """As :func:`_index`, but -1 means the current device (what CUDA's stream functions do)."""
    index = _resolve(device)
    return STATE.current if index == -1 else _check_range(index)


def _property_index(device: Any) -> int:
    """The index for the device-property functions, which torch_npu checks with an AssertionError."""
    index = _resolve(device)
    if not 0 <= index < STATE.device_count:
        raise AssertionError("Invalid device id")
    return index


def current_device() -> int:
    """Index of the current npu device."""
    return STATE.current


def set_device(device: Any) -> None:
    """Make ``device`` (index, "npu:N", torch.device, torch.npu.device) current; a negative index is a no-op."""
    index = _resolve(device)
    if index >= 0:
        STATE.current = _check_range(index)


class device:
    """Context manager that changes the current npu device (a no-op for a negative index)."""

    def __init__(self, device: Any) -> None:
        index = _resolve(device)
        self.idx = -1 if index < 0 else _check_range(index)
        self.prev_idx = -1

    def __enter__(self) -> device:
        self.prev_idx = STATE.current
        if self.idx >= 0:
            STATE.current = self.idx
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.current = self.prev_idx


_DeviceContext = device


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current."""

    def __init__(self, obj: Any) -> None:
        idx = obj.get_device() if obj.device.type == DEVICE_TYPE else -1
        super().__init__(idx)


def synchronize(device: Any = None) -> None:
    """Wait for all work on the device: the simulated device is synchronous (a negative index: none)."""
    index = _resolve(device)
    if index >= 0:
        _check_range(index)


def can_device_access_peer(device: Any, peer_device: Any) -> bool:
    """All simulated devices share host memory, so peers are always reachable."""
    _property_index(device)
    if not 0 <= _resolve(peer_device) < STATE.device_count:
        raise AssertionError("Invalid peer device id")
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
    _property_index(device)
    return os.environ.get("RUNTIME_SHIM_DEVICE_NAME", "Ascend910B2 (simulated by runtime_shim)")


def get_device_properties(device: Any = None) -> _NPUDeviceProperties:
    """Properties of the simulated device; total_memory is the configured capacity."""
    index = _property_index(device)
    return _NPUDeviceProperties(get_device_name(index), _tracker().devices[index].capacity)


def get_device_capability(device: Any = None) -> None:
    """torch_npu reports no CUDA-style capability; neither does the simulation."""
    _property_index(device)
    return None


def _tracker() -> MemoryTracker:
    assert STATE.tracker is not None, "the simulated device is installed before torch.npu is used"
    return STATE.tracker


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu.devices")
