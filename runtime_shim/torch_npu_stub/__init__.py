"""Stand-in for ``torch_npu`` when the simulated NPU is active (no real torch_npu installed).

``import torch_npu`` resolves here through runtime_shim's import hook. The
device itself is ``torch.npu``. The fused operators ported Ascend code calls most are simulated
(``npu_fusion_attention``, ``npu_rms_norm``, ``npu_rotary_mul``, ``npu_swiglu``,
``npu_confusion_transpose``, ``npu_apply_adam_w``: fusion_attention.py, fused_ops.py); every other NPU-only operator
(``torch_npu.npu_*``) is an AttributeError that names it (feature probes take their other path).
"""

from __future__ import annotations

import os as _os
from typing import TYPE_CHECKING as _TYPE_CHECKING

import torch

import runtime_shim as _runtime_shim
from runtime_shim.not_simulated import module_getattr as _module_getattr

_runtime_shim.activate()

from runtime_shim import npu  # noqa: E402,F401  (torch_npu.npu)
from runtime_shim.torch_npu_stub import optim, profiler  # noqa: E402,F401  (torch_npu imports them too)
from runtime_shim.torch_npu_stub.fused_ops import (  # noqa: E402,F401
    npu_apply_adam_w,
    npu_confusion_transpose,
    npu_rms_norm,
    npu_rotary_mul,
    npu_swiglu,
)
from runtime_shim.torch_npu_stub.fusion_attention import npu_fusion_attention  # noqa: E402,F401

__runtime_shim__ = True
#: torch_npu versions track the torch version they are built for.
__version__ = torch.__version__.split("+", 1)[0] + "+runtime_shim"


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch_npu")


def _transfer_to_npu_if_asked() -> None:
    # torch_npu's own switch, read when torch_npu is imported: "1" applies transfer_to_npu, "0" or
    # unset does nothing, anything else is refused (torch_npu raises ValueError too)
    value = _os.environ.get("TORCH_TRANSFER_TO_NPU", "0")
    if value == "1":
        from runtime_shim.torch_npu_stub.contrib.autoload import enable

        enable()
    elif value != "0":
        raise ValueError(f"TORCH_TRANSFER_TO_NPU must be '0' or '1', not {value!r}")


_transfer_to_npu_if_asked()
