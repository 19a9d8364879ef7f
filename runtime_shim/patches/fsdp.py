"""Patches of torch that FSDP (1 and 2) needs on the npu: storages it frees and revives, and
FSDP1's move of a module's states onto the device."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

import torch

from runtime_shim.runtime.state import DEVICE_TYPE


class NotSimulatedError(NotImplementedError):
    """An API the simulated npu does not provide."""


_torch_storage_resize = torch.UntypedStorage.resize_
_torch_storage_nbytes = torch.UntypedStorage.nbytes
_torch_storage_size = torch.UntypedStorage.size
#: Set on an npu storage's Python object while FSDP holds it "freed".
_FREED = "_rs_freed"


def _storage_resize(self: torch.UntypedStorage, size: int) -> torch.UntypedStorage:
    """``resize_`` that lets FSDP free and re-allocate npu parameter storage.

    An npu storage is a fixed view of host bytes and PyTorch's Python backend
    API has no storage-resize hook. So on the npu a resize to 0 (FSDP freeing an
    unsharded parameter) marks the storage freed (it then reports 0 bytes, which
    FSDP reads to decide whether to all-gather) and a resize back to the full
    size revives it; the simulated memory is not handed back in between. Any
    other npu resize is not simulated.
    """
    if self.device.type != DEVICE_TYPE:
        return _torch_storage_resize(self, size)
    if size == 0:
        setattr(self, _FREED, True)
        return self
    if size == _torch_storage_nbytes(self):
        setattr(self, _FREED, False)
        return self
    raise NotSimulatedError(
        f"UntypedStorage.resize_ to {size} bytes on {self.device} is not simulated by runtime_shim"
    )


def _storage_nbytes(self: torch.UntypedStorage) -> int:
    """Bytes of the storage; 0 for an npu storage FSDP has freed."""
    return 0 if getattr(self, _FREED, False) else _torch_storage_nbytes(self)


def _storage_size(self: torch.UntypedStorage) -> int:
    """Size in bytes; 0 for an npu storage FSDP has freed."""
    return 0 if getattr(self, _FREED, False) else _torch_storage_size(self)


_torch_move_states: Any = None


def _move_states_to_npu(
    params: list[torch.nn.Parameter], buffers: list[torch.Tensor], device_from_device_id: torch.device | None
) -> None:
    """FSDP1's move of a module's states to ``device_id``, able to move them onto the npu.

    FSDP moves each state with ``param.data = param.to(device)``, which PyTorch refuses between
    a CPU and a PrivateUse1 tensor ("incompatible tensor type"). Each state is swapped whole
    instead (``torch.utils.swap_tensors``), so the module's own Parameter objects, and any tie
    between them, end up on the npu, as ``param.data =`` does for CUDA.
    """
    device = device_from_device_id
    if device is None or device.type != DEVICE_TYPE:
        _torch_move_states(params, buffers, device)
        return
    with torch.no_grad():
        for state in [*params, *buffers]:
            if state.device == device:
                continue
            grad = state.grad
            moved = state.detach().to(device)
            if isinstance(state, torch.nn.Parameter):
                moved = torch.nn.Parameter(moved, requires_grad=state.requires_grad)
            torch.utils.swap_tensors(state, moved)
            if grad is not None:
                state.grad = grad.to(device)


_INIT_UTILS = "torch.distributed.fsdp._init_utils"


def install() -> None:
    """Apply the FSDP patches (idempotent); torch.distributed must be available.

    The storage methods are patched now; FSDP1's move of states when FSDP is first imported
    (at once if it already is): importing ``torch.distributed.fsdp`` brings DTensor and sympy
    with it, ~2 s of CPU that every npu process paid at activation, FSDP or not."""
    torch.UntypedStorage.resize_ = _storage_resize  # type: ignore[method-assign,assignment]  # the patch
    torch.UntypedStorage.nbytes = _storage_nbytes  # type: ignore[method-assign,assignment]  # the patch
    torch.UntypedStorage.size = _storage_size  # type: ignore[method-assign,assignment]  # the patch
    module = sys.modules.get(_INIT_UTILS)
    if module is not None:
        _patch_init_utils(module)
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


def _patch_init_utils(module: Any) -> None:
    global _torch_move_states
    if module._move_states_to_device is not _move_states_to_npu:
        _torch_move_states = module._move_states_to_device
        module._move_states_to_device = _move_states_to_npu


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when FSDP's ``_init_utils`` is imported, the spec the other finders
    give for it, with a loader that patches the module once it has run."""

    def find_spec(
        self, name: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != _INIT_UTILS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            run(module)
            _patch_init_utils(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]  # patches the module once it has run
        return spec
