"""Every monkey-patch of torch made by runtime_shim lives in this package.

``install()`` applies, at activation, all that the simulated npu needs: npu storages
(``storage.py``), what torch_npu adds to PyTorch's API (``torch_npu_api.py``), torch.accelerator's
memory and synchronize bindings answered by the npu (``accelerator.py``) and what FSDP needs
(``fsdp.py``). Two sets are applied only when asked for, by their own entry points:
``transfer_to_npu/`` when a script imports ``torch_npu.contrib.transfer_to_npu``, and
``step_record.py`` when ``ms_fmk_transplt verify`` records steps (also in a run on the CPU,
where the npu is never activated). Nothing outside this package assigns to a torch class or
module (tests/test_layering.py checks it). Importing the package does not import torch.
"""

from __future__ import annotations


def install() -> None:
    """Apply every patch the activated npu needs (idempotent)."""
    from runtime_shim.patches import accelerator, storage, torch_npu_api

    storage.install()
    torch_npu_api.install()
    accelerator.install()
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - depends on the torch build
        return
    if dist.is_available():
        from runtime_shim.patches import fsdp

        fsdp.install()
