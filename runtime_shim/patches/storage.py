"""Patches of ``torch.UntypedStorage`` that npu storages need: construction and sharing.

* ``torch.UntypedStorage(n, device="npu")`` would reach PyTorch's allocator table, which has no
  PrivateUse1 entry from Python (it crashes the process). ``torch.load(map_location="npu")``,
  ``storage.to("npu")`` and deepcopy all go through it, so npu storages are built over host
  storages instead (runtime/storage.py).
* ``share_memory_()`` / ``is_shared()``: PyTorch skips PrivateUse1 storages; an npu storage's
  host bytes move into shared memory instead (runtime/ipc.py).
"""

from __future__ import annotations

from typing import Any

import torch

from runtime_shim.runtime import ipc
from runtime_shim.runtime.state import DEVICE_TYPE, STATE
from runtime_shim.runtime.storage import binding, new_storage

_torch_share_memory = torch.UntypedStorage.share_memory_
_torch_is_shared = torch.UntypedStorage.is_shared
_torch_new = torch._C.StorageBase.__new__


def _new(cls: type, *args: Any, device: Any = None, **kwargs: Any) -> torch.UntypedStorage:
    """``UntypedStorage.__new__`` that builds an npu storage over a new host storage."""
    if device is not None:
        target = torch.device(device)
        if target.type == DEVICE_TYPE:
            host = _torch_new(torch.UntypedStorage, *args, **kwargs)
            index = STATE.current if target.index is None else target.index
            return new_storage(host, index)
        return _torch_new(cls, *args, device=device, **kwargs)  # type: ignore[call-arg]  # its stubs name no device
    return _torch_new(cls, *args, **kwargs)


def _share_memory(self: torch.UntypedStorage) -> torch.UntypedStorage:
    """``UntypedStorage.share_memory_`` that shares npu storages too (PyTorch skips PrivateUse1)."""
    if self.device.type == DEVICE_TYPE:
        return ipc.share_npu_storage(self)
    return _torch_share_memory(self)


def _is_shared(self: torch.UntypedStorage) -> bool:
    """True for an npu storage only once its bytes are in shared memory."""
    if self.device.type == DEVICE_TYPE:
        return _torch_is_shared(binding(self).host)
    return _torch_is_shared(self)


def install() -> None:
    """Apply the storage patches (idempotent)."""
    if torch.UntypedStorage.__new__ is not _new:
        torch.UntypedStorage.__new__ = _new  # type: ignore[method-assign,assignment]  # the patch
    if torch.UntypedStorage.share_memory_ is not _share_memory:
        torch.UntypedStorage.share_memory_ = _share_memory  # type: ignore[method-assign]  # the patch
        torch.UntypedStorage.is_shared = _is_shared  # type: ignore[method-assign,assignment]  # the patch
