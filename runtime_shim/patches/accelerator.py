"""torch.accelerator on the simulated npu: the device-generic bindings torch routes to C++.

`torch.accelerator.memory_*`, `empty_cache` and `synchronize` call `torch._C._accelerator_*`,
which ask c10 for the device's `DeviceAllocator` and its guard's `synchronizeDevice`. torch_npu
registers a caching `DeviceAllocator` for the npu; the simulated device counts its memory in
Python (runtime/allocator.py, the numbers `torch.npu.memory_*` report), so torch's assertion
"Allocator for npu is not a DeviceAllocator" is what device-agnostic code met. Each binding is
wrapped: while the current accelerator is the npu it answers from the npu's own accounting (the
same numbers as `torch.npu`), for any other accelerator it is torch's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from runtime_shim.runtime.state import DEVICE_TYPE


def _on_npu() -> bool:
    accelerator = torch._C._accelerator_getAccelerator()
    return accelerator is not None and accelerator.type == DEVICE_TYPE


def _nested(flat: dict[str, int]) -> dict[str, Any]:
    """torch.npu's flat statistics nested on their dots, as the C++ binding returns them."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def _npu_forms() -> dict[str, Callable[..., Any]]:
    """The npu's answer for each binding, keyed by the binding's name."""
    from runtime_shim import npu

    return {
        "_accelerator_isAllocatorInitialized": lambda: True,
        "_accelerator_emptyCache": npu.empty_cache,
        "_accelerator_getDeviceStats": lambda index: _nested(npu.memory_stats(index)),
        "_accelerator_resetAccumulatedStats": npu.reset_accumulated_memory_stats,
        "_accelerator_resetPeakStats": npu.reset_peak_memory_stats,
        "_accelerator_getMemoryInfo": npu.mem_get_info,
        "_accelerator_synchronizeDevice": npu.synchronize,
    }


def _routed(original: Callable[..., Any], npu_form: Callable[..., Any]) -> Callable[..., Any]:
    def binding(*args: Any) -> Any:
        return npu_form(*args) if _on_npu() else original(*args)

    binding._runtime_shim = True  # type: ignore[attr-defined]  # a marker on the function object
    binding.__name__ = getattr(original, "__name__", "binding")
    return binding


def install() -> None:
    """Route the bindings (idempotent); a torch without one of them keeps going without it."""
    for name, npu_form in _npu_forms().items():
        original = getattr(torch._C, name, None)
        if original is not None and not getattr(original, "_runtime_shim", False):
            setattr(torch._C, name, _routed(original, npu_form))
