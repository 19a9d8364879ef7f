"""``torch_npu.contrib`` on the simulated NPU: only ``transfer_to_npu`` is simulated.

torch_npu's other contrib modules (fused NPU modules and functions) need NPU-only operators;
importing them raises ModuleNotFoundError naming them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from runtime_shim.not_simulated import module_getattr as _module_getattr

if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch_npu.contrib")
