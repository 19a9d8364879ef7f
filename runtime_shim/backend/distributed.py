"""An ``hccl`` process-group backend for the simulated npu, implemented over gloo.

Design: ``backend="hccl"`` builds an ordinary c10d ``ProcessGroup`` whose
backend, for both ``cpu`` and ``npu``, is a ``ProcessGroupGloo``. Because the
group is a real C++ ``ProcessGroup`` (not a Python subclass), it carries a
name and a description, resolves by name, and works with everything that
builds on c10d: ``new_group``, ``new_subgroups``, ``DeviceMesh``, functional
collectives, DTensor, FSDP1/FSDP2 (with patches/fsdp.py), ``dist.checkpoint`` and DDP.

Every collective reaches the backend through the ``c10d::*`` dispatcher ops.
For the npu (PrivateUse1) key this module registers kernels that swap each
npu tensor for a CPU view of the same bytes and redispatch to the CPU kernel,
which calls gloo. gloo therefore reads and writes the npu tensors' own memory:
no copies, and results are bit-identical to gloo on CPU. The kernels return
the caller's npu tensors, so aliasing contracts (``allreduce_`` returns its
input) hold.

``RUNTIME_SHIM_STRICT=1`` adds the Ascend collective restrictions (see
:func:`check_strict`), so a script that real HCCL rejects fails here first.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch._C import DispatchKey, DispatchKeySet

from runtime_shim.backend import libraries
from runtime_shim.runtime.state import DEVICE_TYPE, STRICT_ENV, strict_enabled
from runtime_shim.runtime.storage import host_view

BACKEND_NAME = "hccl"
_CPU_KEYSET = DispatchKeySet(DispatchKey.CPU)
_CPU_DEVICE = torch.device("cpu")

#: c10d ops that carry tensors and run on a backend; each gets an npu kernel.
COLLECTIVE_OPS = (
    "allreduce_",
    "allreduce_coalesced_",
    "broadcast_",
    "reduce_",
    "allgather_",
    "_allgather_base_",
    "allgather_coalesced_",
    "allgather_into_tensor_coalesced_",
    "gather_",
    "scatter_",
    "reduce_scatter_",
    "_reduce_scatter_base_",
    "reduce_scatter_tensor_coalesced_",
    "alltoall_base_",
    "alltoall_",
    "send",
    "recv_",
    "recv_any_source_",
    "barrier",
    "monitored_barrier_",
)

#: Device counts per server that HCCL accepts (porting guide, collective restrictions).
STRICT_WORLD_SIZES = (1, 2, 4, 8)
#: Element types HCCL collectives accept (torch_npu's HCCL data-type table).
STRICT_DTYPES = frozenset(
    {
        torch.int8,
        torch.uint8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.bool,
    }
)
#: Collectives whose reductions HCCL supports only for a narrower set of types.
_STRICT_REDUCE_OPS = frozenset(
    {
        "allreduce_",
        "allreduce_coalesced_",
        "reduce_",
        "reduce_scatter_",
        "_reduce_scatter_base_",
        "reduce_scatter_tensor_coalesced_",
    }
)
STRICT_REDUCE_DTYPES = frozenset(
    {torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32}
)


class HcclRestrictionError(RuntimeError):
    """A collective that real HCCL rejects (raised only in strict mode)."""


def _host(value: Any) -> Any:
    """npu tensors (also nested in lists) -> CPU views of the same memory."""
    if isinstance(value, torch.Tensor):
        return host_view(value) if value.device.type == DEVICE_TYPE else value
    if isinstance(value, (list, tuple)):
        return [_host(v) for v in value]
    return value


def _tensors(value: Any) -> list[torch.Tensor]:
    """Every tensor in ``value``, flattening nested lists."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def check_strict(op: str, args: tuple[Any, ...], world_size: int) -> None:
    """Raise :class:`HcclRestrictionError` for a collective real HCCL would refuse."""
    if world_size not in STRICT_WORLD_SIZES:
        raise HcclRestrictionError(
            f"hccl: {op} on a group of {world_size} devices; HCCL supports 1, 2, 4 or 8 devices per server "
            f"({STRICT_ENV}=1)"
        )
    allowed = STRICT_REDUCE_DTYPES if op in _STRICT_REDUCE_OPS else STRICT_DTYPES
    for tensor in _tensors(args):
        if tensor.device.type == DEVICE_TYPE and tensor.dtype not in allowed:
            raise HcclRestrictionError(f"hccl: {op} does not support dtype {tensor.dtype} ({STRICT_ENV}=1)")


def _swap_back(result: Any, originals: list[Any], hosts: list[Any]) -> Any:
    """Replace host views in an op's result by the npu tensors they stand for."""
    by_id = {id(h): o for o, h in zip(_tensors(originals), _tensors(hosts), strict=True)}

    def swap(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return by_id.get(id(value), value)
        if isinstance(value, (list, tuple)):
            return type(value)(swap(v) for v in value)
        return value

    return swap(result)


def _make_kernel(op: torch._ops.OpOverload) -> Callable[..., Any]:
    """An npu kernel for ``op``: torch's CPU kernel (it calls the group's gloo backend) on host views.

    The CPU kernel is reached through ``OpOverload.redispatch``, which releases the GIL while
    gloo enqueues the work. That matters: a gloo worker thread drops its last reference to a
    finished work's tensors while holding the queue lock, and our host views are Python-made
    tensors, so that drop takes the GIL. Calling a kernel with the GIL held (``call_boxed``)
    while the worker does it deadlocks the rank (seen under load on 4-rank DeviceMesh runs).
    """
    name = op._schema.name.split("::")[-1]
    group_index = next(i for i, a in enumerate(op._schema.arguments) if a.name == "process_group")

    def kernel(*args: Any) -> Any:
        # Kernels receive the group in its TorchScript box, which has no size() of its own.
        group = dist.ProcessGroup.unbox(args[group_index])
        if strict_enabled():
            check_strict(name, args, group.size())
        _serve_cpu_kernel(group)
        hosts = [_host(a) for a in args]
        if name in _FLAT_BUFFER_OPS:
            hosts = _as_gloo_shapes(name, hosts, group.size())
        result = op.redispatch(_CPU_KEYSET, *hosts)
        return _swap_back(result, list(args), hosts)

    return kernel


#: Collectives over one flat buffer per rank: NCCL and HCCL take any shapes whose element counts
#: match (a flat ``(world*n,)`` or stacked ``(world, *shape)`` gather output), gloo only the
#: dim-0 concatenation. op -> (index of the world-sized buffer(s), index of the per-rank one(s)).
_FLAT_BUFFER_OPS = {
    "_allgather_base_": (0, 1),
    "allgather_into_tensor_coalesced_": (0, 1),
    "_reduce_scatter_base_": (1, 0),
    "reduce_scatter_tensor_coalesced_": (1, 0),
}


def _as_gloo_shapes(name: str, hosts: list[Any], world: int) -> list[Any]:
    """Host views of a flat-buffer collective reshaped to the dim-0 concatenation gloo accepts.

    The views alias the caller's memory, so gloo writes the caller's tensors; rank r's part is
    elements ``[r*n, (r+1)*n)`` of the world-sized buffer, as in NCCL's and HCCL's flat buffers.
    A size mismatch is left for gloo to refuse with its own message.
    """
    whole_at, part_at = _FLAT_BUFFER_OPS[name]
    hosts = list(hosts)
    if isinstance(hosts[whole_at], list):
        pairs = [_gloo_pair(w, p, world) for w, p in zip(hosts[whole_at], hosts[part_at])]
        hosts[whole_at] = [w for w, _ in pairs]
        hosts[part_at] = [p for _, p in pairs]
    else:
        hosts[whole_at], hosts[part_at] = _gloo_pair(hosts[whole_at], hosts[part_at], world)
    return hosts


def _gloo_pair(whole: torch.Tensor, part: torch.Tensor, world: int) -> tuple[torch.Tensor, torch.Tensor]:
    if part.dim() == 0:
        part = part.view(1)
    wanted = (world * part.shape[0], *part.shape[1:])
    if tuple(whole.shape) == wanted or whole.numel() != world * part.numel() or not whole.is_contiguous():
        return whole, part
    return whole.view(wanted), part


def _serve_cpu_kernel(group: dist.ProcessGroup) -> None:
    """Let the CPU kernel that the npu kernels redispatch to find the group's hccl backend.

    A group made for the npu alone (``"npu:hccl"``: what ``init_device_mesh("npu", ...)``
    and a bare ``init_process_group()`` create) has no CPU backend, and the CPU kernel
    asks for one; the group's own hccl backend is registered for the CPU too.
    """
    try:
        group._get_backend(_CPU_DEVICE)
    except RuntimeError:
        backend = group._get_backend(torch.device(DEVICE_TYPE))
        group._register_backend(_CPU_DEVICE, dist.ProcessGroup.BackendType.GLOO, backend)


def _create(store: dist.Store, rank: int, size: int, timeout: timedelta) -> dist.ProcessGroupGloo:
    """Creator for ``backend="hccl"``: a gloo backend the npu kernels feed with host views."""
    if strict_enabled() and size not in STRICT_WORLD_SIZES:
        raise HcclRestrictionError(
            f"hccl: a process group of {size} devices; HCCL supports 1, 2, 4 or 8 devices per server "
            f"({STRICT_ENV}=1)"
        )
    backend = dist.ProcessGroupGloo(store, rank, size, timeout)
    _keep_until_exit(backend)
    return backend


#: Every gloo backend made for hccl, released only at exit (see `_keep_until_exit`).
_BACKENDS: list[Any] = []


def _keep_until_exit(backend: Any) -> None:
    """Hold `backend` until the interpreter exits, then let it go after its threads are idle.

    A gloo work item issued from the npu kernels captures the caller's thread-local state, which
    holds Python objects; the gloo worker thread drops them, taking the GIL, after the work is
    done. A script that ends right after its last collective (DDP's usual `destroy_process_group()`
    then return) drops the last reference to the group in the main thread, whose destructor joins
    the worker thread while holding the GIL: a deadlock, seen as a hang of 1 run in 3 on a loaded
    machine. Kept here, the backend outlives the script; at exit a short sleep lets the worker
    threads take the GIL and finish, and only then are the backends destroyed.
    """
    if not _BACKENDS:
        import atexit

        atexit.register(_release_backends)
    _BACKENDS.append(backend)


def _release_backends() -> None:
    import time

    time.sleep(0.05)  # releases the GIL: pending work items finish dropping their state
    _BACKENDS.clear()


def register() -> None:
    """Make ``backend="hccl"`` available (for the npu device) in torch.distributed."""
    if BACKEND_NAME in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu", DEVICE_TYPE])
    library = libraries.make("hccl", "c10d")
    with warnings.catch_warnings():
        # Replacing torch's own npu kernels is the point; don't warn about it.
        warnings.filterwarnings("ignore", "Warning only once for all operators")
        for op_name in COLLECTIVE_OPS:
            library.impl(op_name, _make_kernel(getattr(torch.ops.c10d, op_name).default), "PrivateUse1")
