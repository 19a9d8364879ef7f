"""torch.npu options that torch_npu scripts set: recorded and read back, never changing host math."""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

from runtime_shim.not_simulated import module_getattr as _module_getattr

_options: dict[str, Any] = {}


def set_option(option: dict[str, Any]) -> None:
    """Accepted and recorded: no option changes host computation."""
    if not isinstance(option, dict):
        raise TypeError("npu option must be a dict.")
    _options.update(option)


def set_compile_mode(jit_compile: bool = False) -> None:
    """Accepted and recorded (operator compilation does not exist on the host)."""
    _options["jit_compile"] = bool(jit_compile)


def is_jit_compile_false() -> bool:
    """Whether set_compile_mode(jit_compile=False) is in effect (the default)."""
    return not _options.get("jit_compile", False)


def get_sync_debug_mode() -> int:
    """The recorded sync debug mode (0 by default)."""
    return _options.get("sync_debug_mode", 0)


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """Record the sync debug mode (the simulated device never syncs implicitly)."""
    modes = {"default": 0, "warn": 1, "error": 2}
    _options["sync_debug_mode"] = (
        modes.get(debug_mode, debug_mode) if isinstance(debug_mode, str) else debug_mode
    )


class _HF32Flags:
    """Holder for ``torch.npu.matmul.allow_hf32`` / ``torch.npu.conv.allow_hf32``.

    The flags are stored and read back; host kernels always compute in IEEE fp32.
    """

    def __init__(self, allow_hf32: bool) -> None:
        self.allow_hf32 = allow_hf32


matmul = _HF32Flags(False)
conv = _HF32Flags(True)


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu.options")
