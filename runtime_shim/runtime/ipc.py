"""npu tensors shared between processes, as CUDA IPC and torch_npu's IPC share device memory.

An npu storage is a non-owning view of a host storage's bytes (storage.py). Sharing it moves
those bytes into shared memory once, the way PyTorch moves a CPU storage: a shared-memory host
storage takes a copy, and the npu storage's data pointer is swapped to the new bytes in place,
so every tensor and view over it keeps working. From then on the npu storage pickles as its
shared host storage (PyTorch's own fd or file-name sharing, per
``torch.multiprocessing.get_sharing_strategy()``) plus the device index; the receiving process
makes an npu storage over the same shared bytes. So, as with CUDA/NPU IPC:

* ``model.share_memory()`` on an npu model, then ``mp.Process(target=train, args=(model,))``
  (spawn or fork) shares the parameters: a write in the child is seen by the parent (hogwild);
* npu tensors put on a ``torch.multiprocessing`` Queue, or passed to a Pool, arrive in the
  other process over the same memory;
* one storage arrives as one storage, so views of it still alias in the receiver.

A forked child keeps what was shared before the fork. torch_npu refuses any NPU use in a forked
child of a process that had used the NPU; ``RUNTIME_SHIM_STRICT=1`` does the same (so a
DataLoader's default fork workers that make npu tensors fail here as they do on an NPU).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch
from torch.multiprocessing import reductions

from runtime_shim.runtime.state import DEVICE_TYPE, STATE, strict_enabled
from runtime_shim.runtime.storage import binding as _binding
from runtime_shim.runtime.storage import new_storage

_storage_from_ptr = torch._C._construct_storage_from_data_pointer
_torch_is_shared = torch.UntypedStorage.is_shared
#: In a receiving process: shared host address -> the npu storage made over it.
_received: weakref.WeakValueDictionary[tuple[int, int], torch.UntypedStorage] = weakref.WeakValueDictionary()
#: torch_npu's error for NPU use in a forked child (its ``_lazy_init`` after a fork)
FORK_MESSAGE = (
    "Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, "
    "you must use the 'spawn' start method"
)
_fork_hook_installed = False


def share_npu_storage(storage: torch.UntypedStorage) -> torch.UntypedStorage:
    """Move an npu storage's host bytes into shared memory (once); returns ``storage``."""
    binding = _binding(storage)
    host = binding.host
    if _torch_is_shared(host) or binding.nbytes == 0:
        return storage
    shared = torch.UntypedStorage._new_shared(binding.nbytes)
    shared.copy_(host)
    # Point the npu storage at the shared bytes: tensors over it keep their geometry.
    replacement = _storage_from_ptr(shared.data_ptr(), storage.device, binding.nbytes)
    storage._swap_data_ptr_(replacement)  # type: ignore[attr-defined]  # in torch's C API, not in its stubs
    if not binding.counted:
        # A storage the native kernels made: its old data pointer (now in `replacement`)
        # releases the native count when dropped, so the binding counts the bytes from here on.
        binding.memory.allocate(binding.nbytes)
        binding.counted = True
    binding.host = shared
    binding.ptr = shared.data_ptr()
    binding.views.clear()  # CPU views over the old bytes
    binding.bases = None
    return storage


def _reduce_storage(storage: torch.UntypedStorage) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Pickle an npu storage as its (shared) host storage and device index."""
    if storage.device.type != DEVICE_TYPE:
        return reductions.reduce_storage(storage)
    share_npu_storage(storage)
    binding = _binding(storage)
    rebuild, args = reductions.reduce_storage(binding.host)
    return (rebuild_npu_storage, (binding.index, rebuild, args))


def rebuild_npu_storage(index: int, rebuild: Any, args: tuple[Any, ...]) -> torch.UntypedStorage:
    """In the receiving process: an npu storage over the shared host bytes."""
    host = rebuild(*args)
    key = (index, host.data_ptr())
    storage = _received.get(key)
    if storage is None or _binding(storage).host.data_ptr() != key[1]:
        if STATE.tracker is None:
            raise RuntimeError(
                "an npu tensor arrived in a process without the simulated npu; start it under runtime_shim"
            )
        storage = new_storage(host, index)
        _received[key] = storage
    return storage


def _refuse_npu_after_fork() -> None:
    """In a forked child, strict mode: every npu allocation fails as torch_npu's would."""
    tracker = STATE.tracker
    if tracker is None or not strict_enabled() or not any(d.num_allocs for d in tracker.devices):
        return  # the parent never used the npu: torch_npu initialises it in the child
    for memory in tracker.devices:
        memory.refuse = FORK_MESSAGE
        # The hot allocation path consults check() only past capacity; below zero, always.
        memory.capacity = -1


def install() -> None:
    """Share npu storages when pickled for another process; refuse npu use after a fork in strict
    mode (idempotent). ``share_memory_()`` itself is patched by patches/storage.py."""
    global _fork_hook_installed
    if not _fork_hook_installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_refuse_npu_after_fork)
        _fork_hook_installed = True
    ForkingPickler.register(torch.UntypedStorage, _reduce_storage)
