"""torch.npu's memory API over the allocator's accounting (runtime_shim/runtime/allocator.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

from runtime_shim.not_simulated import module_getattr as _module_getattr
from runtime_shim.npu.devices import _index, _tracker
from runtime_shim.runtime.allocator import DeviceMemory


def _memory(device: Any = None) -> DeviceMemory:
    return _tracker().devices[_index(device)]


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live npu storages on the device."""
    return _memory(device).allocated


def max_memory_allocated(device: Any = None) -> int:
    """Peak of memory_allocated since start or the last peak reset."""
    return _memory(device).peak_allocated


def memory_reserved(device: Any = None) -> int:
    """Bytes reserved by the simulated caching allocator (freed bytes stay until empty_cache)."""
    return _memory(device).reserved


def max_memory_reserved(device: Any = None) -> int:
    """Peak of memory_reserved."""
    return _memory(device).peak_reserved


def memory_cached(device: Any = None) -> int:
    """Deprecated alias of memory_reserved."""
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    """Deprecated alias of max_memory_reserved."""
    return max_memory_reserved(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart the peak counters."""
    _memory(device).reset_peak()


def reset_max_memory_allocated(device: Any = None) -> None:
    """Restart the peak counters (torch_npu resets both)."""
    _memory(device).reset_peak()


def reset_max_memory_cached(device: Any = None) -> None:
    """Restart the peak counters (torch_npu resets both)."""
    _memory(device).reset_peak()


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Reset the allocation/free counts."""
    mem = _memory(device)
    mem.num_allocs = mem.num_frees = 0


def empty_cache() -> None:
    """Release cached blocks: reserved memory drops to allocated memory."""
    for mem in _tracker().devices:
        mem.empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device, from the simulated capacity."""
    mem = _memory(device)
    return mem.capacity - mem.reserved, mem.capacity


def memory_stats(device: Any = None) -> dict[str, int]:
    """A flat dict with the main keys of torch.cuda.memory_stats()."""
    return _memory(device).stats()


def memory_stats_as_nested_dict(device: Any = None) -> dict[str, Any]:
    """memory_stats() nested on its dots, as torch.cuda does."""
    nested: dict[str, Any] = {}
    for key, value in memory_stats(device).items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return nested


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A short human-readable memory report."""
    mem = _memory(device)
    return (
        f"runtime_shim simulated NPU {mem.index}: allocated {mem.allocated} B "
        f"(peak {mem.peak_allocated} B), reserved {mem.reserved} B (peak {mem.peak_reserved} B), "
        f"capacity {mem.capacity} B"
    )


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Cap the device at ``fraction`` of its configured capacity."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    mem = _memory(device)
    mem.capacity = int(mem.full_capacity * fraction)


def get_per_process_memory_fraction(device: Any = None) -> float:
    """The fraction set by set_per_process_memory_fraction (1.0 by default)."""
    mem = _memory(device)
    return mem.capacity / mem.full_capacity


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu.memory")
