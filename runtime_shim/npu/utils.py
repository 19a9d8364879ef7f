"""``torch.npu.utils`` (= ``torch_npu.npu.utils``): torch_npu's module of device utilities.

torch_npu defines these functions there and re-exports them from ``torch.npu``; here they are the
same objects as ``torch.npu.X`` (simulated, or raising "not simulated" when called).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any, NoReturn

import runtime_shim.npu as _npu
from runtime_shim.not_simulated import module_getattr as _module_getattr

# torch_npu.npu.utils.__all__ (torch_npu 26.1), less the names simulated differently below.
_FROM_NPU = (
    "obfuscation_initialize",
    "obfuscation_finalize",
    "obfuscation_calculate",
    "synchronize",
    "set_device",
    "current_device",
    "device",
    "device_of",
    "StreamContext",
    "stream",
    "set_stream",
    "current_stream",
    "default_stream",
    "set_sync_debug_mode",
    "get_sync_debug_mode",
    "init_dump",
    "set_dump",
    "finalize_dump",
    "is_bf16_supported",
    "get_npu_overflow_flag",
    "clear_npu_overflow_flag",
    "current_blas_handle",
    "check_uce_in_memory",
    "stress_detect",
    "ipc_collect",
    "set_op_timeout_ms",
)
for _name in _FROM_NPU:
    globals()[_name] = getattr(_npu, _name)
del _name


def is_support_inf_nan() -> bool:
    """True: the simulated device computes in host arithmetic, which keeps inf and nan (INF_NAN mode)."""
    return True


def _not_simulated(name: str) -> Callable[..., NoReturn]:
    def unavailable(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"torch.npu.utils.{name} is not simulated by runtime_shim (no CANN)")

    unavailable.__name__ = unavailable.__qualname__ = name
    return unavailable


npu_check_overflow = _not_simulated("npu_check_overflow")
get_cann_version = _not_simulated("get_cann_version")

__all__ = [*_FROM_NPU, "is_support_inf_nan", "npu_check_overflow", "get_cann_version"]


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu.utils")
