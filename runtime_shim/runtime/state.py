"""State of the simulated device: its type name, the current device (per thread), the counters."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import torch

from runtime_shim.runtime import allocator as _memory

DEVICE_TYPE = "npu"
# set to 1, the Ascend restrictions apply: HCCL's on collectives, torch_npu's on forked children
STRICT_ENV = "RUNTIME_SHIM_STRICT"


class _State:
    """Process-wide state of the simulated device (filled in by install())."""

    def __init__(self) -> None:
        self.installed = False
        self.device_count = 0
        # the current device of each thread (without the native part, which keeps it itself)
        self._local = threading.local()
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
        self.on_first_call: Callable[[str, tuple[Any, ...]], None] | None = None

    @property
    def current(self) -> int:
        """Index of the calling thread's current npu device (a new thread starts on device 0).

        Per thread, as on CUDA and in torch_npu. With the native part, its device guard keeps the
        index, so that torch.accelerator and PyTorch's device guards agree with torch.npu.
        """
        if self.native is not None:
            return int(self.native.current())
        return getattr(self._local, "index", 0)

    @current.setter
    def current(self, index: int) -> None:
        if self.native is not None:
            self.native.set_current(index)
        else:
            self._local.index = index


STATE = _State()


def device_error(a: Any, b: Any) -> RuntimeError:
    """The mixed-device error, worded like PyTorch's TensorIterator device check."""
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!"
    )


def strict_enabled() -> bool:
    """True when ``RUNTIME_SHIM_STRICT=1`` asks for the Ascend restrictions."""
    return os.environ.get(STRICT_ENV, "") == "1"
