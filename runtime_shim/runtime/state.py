"""Process-wide state of the simulated device: its type name, the current device, the counters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from runtime_shim.runtime import allocator as _memory

DEVICE_TYPE = "npu"


class _State:
    """Process-wide state of the simulated device (filled in by install())."""

    def __init__(self) -> None:
        self.installed = False
        self.device_count = 0
        self._current = 0
        self.devices: list[torch.device] = []
        self.tracker: _memory.MemoryTracker | None = None
        #: the native part (backend/native.py), None on the Python path
        self.native: Any = None
        # anchors[i]: a zero-byte tensor on npu:i. A fresh output for device i
        # starts as a metadata alias of it, because set_ only accepts a storage
        # on the tensor's own device.
        self.anchors: dict[int, torch.Tensor] = {}
        #: op name -> [calls]; opcheck reads it for the exit report.
        self.op_counts: dict[str, list[int]] = {}
        #: called with the op name and its arguments on the first call of each op (opcheck
        #: hook); it may zero the op's count to be called again on the next call.
        self.on_first_call: Callable[[str, tuple], None] | None = None

    @property
    def current(self) -> int:
        """Index of the current npu device."""
        return self._current

    @current.setter
    def current(self, index: int) -> None:
        self._current = index
        if self.native is not None:
            self.native.set_current(index)  # factories on a bare "npu" in the native kernels


STATE = _State()


def device_error(a: Any, b: Any) -> RuntimeError:
    """The mixed-device error, worded like PyTorch's TensorIterator device check."""
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!"
    )
