"""``from torch_npu.contrib import transfer_to_npu``: run an unmodified CUDA script on the npu.

Importing this module patches torch once per process, as torch_npu's module of the same name
does: ``torch.cuda.*`` is answered by ``torch.npu``, ``.cuda()`` and CUDA device arguments go to
the npu, nccl to hccl. What is patched: ``runtime_shim/patches/transfer_to_npu/transfer.py``
and runtime_shim/README.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from runtime_shim.not_simulated import module_getattr as _module_getattr
from runtime_shim.patches.transfer_to_npu.transfer import install
from runtime_shim.torch_npu_stub import profiler as _profiler

__all__: list[str] = []

#: The patches made at import (``PATCHES.restore()`` undoes them; only tests need that).
PATCHES = install(_profiler)


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch_npu.contrib.transfer_to_npu")
