"""Stand-in for Ascend's ``apex`` when none is installed: ``apex.amp`` and ``apex.optimizers``.

``import apex`` resolves here through runtime_shim's import hook once the simulated
npu is active. The surface is the one the Ascend porting guide documents: opt levels
O0-O3, static or dynamic loss scaling, ``combine_grad``, and the NPU fused optimizers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

import runtime_shim as _runtime_shim
from runtime_shim.not_simulated import module_getattr as _module_getattr

_runtime_shim.activate()

from runtime_shim.apex_stub import amp, optimizers  # noqa: E402

__runtime_shim__ = True
__all__ = ["amp", "optimizers"]


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("apex")
