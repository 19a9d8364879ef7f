"""Device-memory bookkeeping for the simulated NPU.

Every npu storage is a view of a host buffer; this module counts the bytes of
the live ones per device, so ``torch.npu.memory_allocated()`` and friends report
real numbers and an allocation past the configured capacity fails the way a
real NPU does.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import torch

#: Capacity of each simulated device, overridable with RUNTIME_SHIM_DEVICE_MEMORY
#: (bytes, or a number with a K/M/G/T suffix).
DEFAULT_CAPACITY = 64 * 1024**3


def parse_size(text: str) -> int:
    """Parse ``"64G"``, ``"512M"``, ``"1.5T"`` or a plain byte count into bytes."""
    raw = text.strip().upper().removesuffix("IB").removesuffix("B")
    units = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
    if raw and raw[-1] in units:
        return int(float(raw[:-1]) * units[raw[-1]])
    return int(raw)


def _format_size(nbytes: int) -> str:
    # Same rendering as the CUDA/NPU caching allocators use in their OOM text.
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} bytes"


class DeviceMemory:
    """Byte counters of one simulated device.

    ``reserved`` models a caching allocator: freed bytes stay reserved until
    ``empty_cache()``, as on a real device, so reserved >= allocated always.
    """

    def __init__(self, index: int, capacity: int) -> None:
        self.index = index
        self.capacity = capacity
        #: the configured capacity; set_per_process_memory_fraction caps ``capacity`` below it
        self.full_capacity = capacity
        self.allocated = 0
        self.peak_allocated = 0
        self.reserved = 0
        self.peak_reserved = 0
        self.num_allocs = 0
        self.num_frees = 0
        #: set when every allocation must fail with this message (a forked child, strict mode)
        self.refuse: str | None = None
        self._lock = threading.Lock()

    def check(self, nbytes: int) -> None:
        """Raise the NPU out-of-memory error if ``nbytes`` more would not fit."""
        if self.refuse is not None:
            raise RuntimeError(self.refuse)
        if self.allocated + nbytes > self.capacity:
            free = self.capacity - self.allocated
            raise torch.OutOfMemoryError(
                f"NPU out of memory. Tried to allocate {_format_size(nbytes)} "
                f"(NPU {self.index}; {_format_size(self.capacity)} total capacity; "
                f"{_format_size(self.allocated)} already allocated; "
                f"{_format_size(free)} free; simulated by runtime_shim)"
            )

    def allocate(self, nbytes: int) -> None:
        """Account for a new live storage of ``nbytes`` (the caller ran check() first)."""
        with self._lock:
            allocated = self.allocated = self.allocated + nbytes
            self.num_allocs += 1
        if allocated > self.peak_allocated:
            self.peak_allocated = allocated
        if allocated > self.reserved:
            self.reserved = allocated
            if allocated > self.peak_reserved:
                self.peak_reserved = allocated

    def release(self, nbytes: int) -> None:
        """Account for a storage of ``nbytes`` that died."""
        # Storages die on whichever thread drops the last tensor (DataLoader pin
        # thread, autograd), so updates are serialised.
        with self._lock:
            self.allocated -= nbytes
            self.num_frees += 1

    def empty_cache(self) -> None:
        """Return cached (reserved but unallocated) bytes, as a real empty_cache does."""
        self.reserved = self.allocated

    def reset_peak(self) -> None:
        """Restart the peak counters from the current values."""
        self.peak_allocated = self.allocated
        self.peak_reserved = self.reserved

    def stats(self) -> dict[str, int]:
        """A flat subset of the keys ``torch.cuda.memory_stats()`` reports."""
        return {
            "allocated_bytes.all.current": self.allocated,
            "allocated_bytes.all.peak": self.peak_allocated,
            "reserved_bytes.all.current": self.reserved,
            "reserved_bytes.all.peak": self.peak_reserved,
            "active_bytes.all.current": self.allocated,
            "num_alloc_retries": 0,
            "num_ooms": 0,
            "allocation.all.allocated": self.num_allocs,
            "allocation.all.freed": self.num_frees,
        }


def _native_counter(which: int) -> property:
    def get(self: NativeDeviceMemory) -> int:
        return self._native.mem_get(self.index, which)

    def set(self: NativeDeviceMemory, value: int) -> None:
        self._native.mem_set(self.index, which, int(value))

    return property(get, set)


class NativeDeviceMemory(DeviceMemory):
    """The counters of one device kept by the native part (csrc/npu_dispatch.cpp).

    Storages made by the native kernels are counted there, without Python; storages made by
    the Python path are counted through these methods, so both paths share one set of numbers.
    """

    def __init__(self, index: int, native: Any) -> None:  # the counters are properties, below
        self.index = index
        self._native = native
        self._lock = threading.Lock()

    @property
    def refuse(self) -> str | None:
        return self._native.mem_refusal(self.index)

    @refuse.setter
    def refuse(self, message: str | None) -> None:
        self._native.mem_refuse(self.index, message)

    def allocate(self, nbytes: int) -> None:
        """Account for a new live storage of ``nbytes`` (the caller ran check() first)."""
        self._native.mem_allocate(self.index, nbytes)

    def release(self, nbytes: int) -> None:
        """Account for a storage of ``nbytes`` that died."""
        self._native.mem_release(self.index, nbytes)


for _which, _name in enumerate(
    (
        "allocated",
        "peak_allocated",
        "reserved",
        "peak_reserved",
        "num_allocs",
        "num_frees",
        "capacity",
        "full_capacity",
    )
):
    setattr(NativeDeviceMemory, _name, _native_counter(_which))


class MemoryTracker:
    """Counters for all simulated devices (kept by the native part when it is loaded)."""

    def __init__(self, device_count: int, capacity: int, native: Any = None) -> None:
        self.devices: list[DeviceMemory]
        if native is None:
            self.devices = [DeviceMemory(i, capacity) for i in range(device_count)]
        else:
            native.mem_init(device_count, capacity)
            self.devices = [NativeDeviceMemory(i, native) for i in range(device_count)]


def capacity_from_env() -> int:
    """The per-device capacity: RUNTIME_SHIM_DEVICE_MEMORY or 64 GiB."""
    value = os.environ.get("RUNTIME_SHIM_DEVICE_MEMORY")
    return parse_size(value) if value else DEFAULT_CAPACITY
