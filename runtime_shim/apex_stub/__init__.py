"""Stand-in for Ascend's ``apex`` when none is installed: ``apex.amp`` and ``apex.optimizers``.

``import apex`` resolves here through runtime_shim's import hook once the simulated
npu is active. The surface is the one the Ascend porting guide documents: opt levels
O0-O3, static or dynamic loss scaling, ``combine_grad``, and the NPU fused optimizers.
"""

from __future__ import annotations

from typing import NoReturn as _NoReturn

import runtime_shim as _runtime_shim

_runtime_shim.activate()

from runtime_shim.apex_stub import amp, optimizers  # noqa: E402

__runtime_shim__ = True
__all__ = ["amp", "optimizers"]


def __getattr__(name: str) -> _NoReturn:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"apex.{name} is not simulated by runtime_shim")
