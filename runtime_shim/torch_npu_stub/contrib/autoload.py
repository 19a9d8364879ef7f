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

ENV = "TORCH_TRANSFER_TO_NPU"
MODULE = "torch_npu.contrib.transfer_to_npu"


def enable() -> None:
    """Apply transfer_to_npu in this process and ask child processes to do the same."""
    os.environ[ENV] = "1"
    importlib.import_module(MODULE)
