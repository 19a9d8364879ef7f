"""Every dispatcher library of the simulated npu: made here, held here for the life of the process.

A ``torch.library.Library`` withdraws its registrations when it is garbage-collected, so each one
must stay referenced; holding them all in one table (by purpose) is what keeps them alive.
Purposes and their registrations:

* ``kernels``: every ATen op's PrivateUse1 kernel (registration.py);
* ``switchable``: the Python kernels of the ops the native path can serve, while it does not (dispatch.py);
* ``fallback``: the boxed PrivateUse1 fallback for ops without a CPU kernel (registration.py);
* ``shallow_copy``: ``_has_compatible_shallow_copy_type`` for in-place module moves (registration.py);
* ``host_pinning``: pinning as a copy on the Python path (registration.py);
* ``rnn``: LSTM/GRU/RNN layers and cells (rnn.py);
* ``autocast_fallthrough`` and ``autocast``: the AutocastPrivateUse1 policy (autocast/policy.py);
* ``attention``: the SDPA/dropout choice of the CPU (attention.py);
* ``hccl``: the c10d collectives on npu tensors (distributed.py);
* ``npu_level``: the operator check's NPU-level recorders on the Python path (dispatch.py).
"""

from __future__ import annotations

import torch

_HELD: dict[str, torch.library.Library] = {}


def get(purpose: str) -> torch.library.Library | None:
    """The library made for ``purpose``, or None when none was made yet."""
    return _HELD.get(purpose)


def make(purpose: str, namespace: str = "aten") -> torch.library.Library:
    """A new ``IMPL`` library over ``namespace`` (``"_"`` for fallbacks), held under ``purpose``."""
    if purpose in _HELD:
        raise RuntimeError(f"runtime_shim: a dispatcher library for {purpose!r} was already made")
    library = _HELD[purpose] = torch.library.Library(namespace, "IMPL")
    return library


def held() -> dict[str, torch.library.Library]:
    """Every library made so far, by purpose (a copy)."""
    return dict(_HELD)


def drop(purpose: str) -> None:
    """Withdraw every registration of the library made for ``purpose`` (nothing if none was made)."""
    library = _HELD.pop(purpose, None)
    if library is not None:
        library._destroy()
