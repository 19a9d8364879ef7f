"""runtime_shim: run scripts converted for Ascend NPU on a machine without one.

``python -m runtime_shim train.py ARGS...`` runs ``train.py`` with a simulated
``npu`` device: ``import torch_npu`` works, ``torch.npu`` exists, npu tensors
live in host memory and compute with PyTorch's CPU kernels, bit-identical to
running the original script on CPU. Programmatic use::

    import runtime_shim
    runtime_shim.activate()

Supported torch versions: >=2.6,<2.14 (verified on 2.13.0). Importing this
package does not import torch; activate() does. It never imports libcst,
click or rich.
"""

from __future__ import annotations

from runtime_shim.activate import activate, is_active, real_torch_npu_installed
from runtime_shim.torch_version import SUPPORTED as SUPPORTED_TORCH

__all__ = ["SUPPORTED_TORCH", "activate", "is_active", "real_torch_npu_installed"]


def __getattr__(name: str) -> str:
    """``__version__`` is the installed distribution's, read only when asked for."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("ms-fmk-transplt")
        except PackageNotFoundError:
            return "0+unknown"
    raise AttributeError(f"module 'runtime_shim' has no attribute {name!r}")
