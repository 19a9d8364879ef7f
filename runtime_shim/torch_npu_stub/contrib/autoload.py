"""transfer_to_npu without an edit to the script: the launcher and its child processes.

torch_npu turns transfer_to_npu on at import when ``TORCH_TRANSFER_TO_NPU=1``, and torch imports
torch_npu by itself (device-backend autoload), so on an NPU the variable alone ports a run.
``python -m runtime_shim --transfer-to-npu`` sets it (``__main__`` checks the value before torch
is imported); a child process of the run (``mp.spawn``, spawned DataLoader workers) applies the
patches from its boot ``sitecustomize``, at start-up rather than at its first ``import torch``.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING as _TYPE_CHECKING

from runtime_shim.not_simulated import module_getattr as _module_getattr

ENV = "TORCH_TRANSFER_TO_NPU"
MODULE = "torch_npu.contrib.transfer_to_npu"


def enable() -> None:
    """Apply transfer_to_npu in this process and ask child processes to do the same."""
    os.environ[ENV] = "1"
    importlib.import_module(MODULE)


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch_npu.contrib.autoload")
