"""The simulated ``npu`` device: PrivateUse1 renamed to ``npu``, backed by host memory.

Design (why it is shaped like this):

* An npu tensor is a genuine PrivateUse1 tensor (``type(t) is torch.Tensor``,
  ``t.device.type == "npu"``) whose storage is a *non-owning* npu storage over
  the bytes of a host ``UntypedStorage``. The host storage hangs off an
  attribute of the npu storage's Python object, which PyTorch keeps alive for
  as long as any tensor uses the StorageImpl. So npu tensors carry exactly the
  sizes, strides and offset of the host data (needed for bit-parity: autograd
  and matmul backward read strides), views alias correctly, and ``torch.save``
  sees real bytes.
* Compute: every ATen op that has a CPU kernel gets a PrivateUse1 kernel
  registered up front. A direct kernel is several times cheaper to enter than a
  boxed Python fallback, and it stops structured ops from being split into
  ``empty`` + ``op.out`` (two Python round trips). The kernel re-views each npu
  argument as a CPU tensor over the same bytes, runs the CPU kernel and wraps
  fresh outputs as npu tensors. View ops run their CPU kernel directly on the
  npu tensors: those kernels only edit metadata. Each kernel is specialised
  from the op's schema once.
* Per-op cost (the point of the simulated device is that it is cheap):
  CPU views are cached per storage, keyed by (dtype, size, stride, offset), so
  an argument seen before costs a dict lookup rather than an ``as_strided``; a
  fresh output's CPU tensor is entered in that cache as it is wrapped. Keying
  by geometry (not by tensor) keeps the cache right through ``t_()``,
  ``resize_``, ``.data =`` and friends, and it dies with the storage. CPU
  kernels are reached by redispatching with the CPU key set (half the cost of
  calling the OpOverload), except when a Python scalar sits in a tensor slot:
  only the OpOverload path turns it back into a wrapped-number tensor.
* Ops without a CPU kernel that still reach the device (``_copy_from`` and
  friends) go through one boxed fallback which builds the same kernels lazily.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import cast

import torch
from torch._C import DispatchKey, DispatchKeySet

from runtime_shim.runtime import allocator as _memory
from runtime_shim.runtime.state import STATE

_Tensor = torch.Tensor
_CPU = torch.device("cpu")
_CPU_KEYSET = DispatchKeySet(DispatchKey.CPU)
_make_shell = torch._C._acc.create_empty_tensor
# torch's stubs say it returns a Storage; at run time it is an UntypedStorage
_storage_from_ptr = cast(
    "Callable[[int, torch.device, int], torch.UntypedStorage]", torch._C._construct_storage_from_data_pointer
)
_SET_STORAGE = torch.ops.aten.set_.source_Storage_storage_offset._handle
_AS_STRIDED = torch.ops.aten.as_strided.default._handle
# The CPU set_ kernel itself (a boxed call that skips the dispatch-table lookup).
_SET_STORAGE_CPU = torch._C._dispatch_get_computed_kernel_for_dispatch_key(
    "aten::set_.source_Storage_storage_offset", DispatchKey.CPU
).call_boxed


# ------------------------------------------------------------------ storages and wrapping


class HostBinding:
    """What an npu storage knows about its host bytes; lives as ``storage._npu_binding``.

    PyTorch keeps the npu storage's Python object (and so this binding) alive
    exactly as long as some tensor uses the storage, so ``__del__`` is the moment
    the device memory is freed: it releases the bytes from the accounting and
    drops the host buffer.

    ``views`` caches CPU tensors over the host bytes, keyed by the geometry of
    the npu tensor they stand for: kernels look an npu argument up here instead
    of building a fresh CPU view on every op. A fresh output's CPU tensor is
    entered as it is wrapped, so the next op that reads it finds it.
    """

    __slots__ = ("bases", "counted", "host", "index", "memory", "nbytes", "ptr", "views")

    def __init__(
        self,
        host: torch.UntypedStorage,
        index: int,
        nbytes: int,
        memory: _memory.DeviceMemory,
        counted: bool = True,
    ) -> None:
        self.host = host
        self.index = index
        #: dtype -> CPU tensor spanning the whole host storage (as_strided
        #: source); made on first use, as most storages never need one.
        self.bases: dict[torch.dtype, torch.Tensor] | None = None
        #: (dtype, size, stride, offset) -> CPU tensor with that geometry
        self.views: dict[
            tuple[torch.dtype, torch.Size, tuple[int, ...], int | torch.SymInt], torch.Tensor
        ] = {}
        self.nbytes = nbytes
        self.memory = memory
        self.ptr = host.data_ptr()
        #: whether this binding accounts for the bytes (a storage the native kernels made is
        #: counted by the native part, which frees it; its binding is made later, on demand)
        self.counted = counted
        if counted:
            memory.allocate(nbytes)

    def __del__(self) -> None:
        if self.counted:
            self.memory.release(self.nbytes)


def binding(storage: torch.UntypedStorage) -> HostBinding:
    """The HostBinding of npu storage ``storage``, made on first use for one the native kernels made."""
    info = getattr(storage, "_npu_binding", None)
    if info is None:
        info = native_binding(storage)
        if info is None:
            raise RuntimeError("runtime_shim: an npu storage without host bytes")
    return info


def native_binding(storage: torch.UntypedStorage) -> HostBinding | None:
    """A binding for a storage made by the native kernels (None for any other storage)."""
    native = STATE.native
    found = native.host_of(storage) if native is not None else None
    if found is None:
        return None
    host, index, nbytes = found
    assert STATE.tracker is not None
    info = HostBinding(host.untyped_storage(), index, nbytes, STATE.tracker.devices[index], counted=False)
    storage._npu_binding = info  # type: ignore[attr-defined]  # the binding rides on the storage object
    return info


#: A storage with many distinct views (a flat buffer sliced in a loop) keeps at
#: most this many cached CPU views; past it the cache starts over.
MAX_VIEWS = 16


def new_storage(host: torch.UntypedStorage, index: int) -> torch.UntypedStorage:
    """Make an npu storage (device ``index``) over ``host``'s bytes, counted as device memory."""
    nbytes = host.nbytes()
    assert STATE.tracker is not None, "install() sets the tracker before any storage is made"
    memory = STATE.tracker.devices[index]
    memory.check(nbytes)
    storage = _storage_from_ptr(host.data_ptr(), STATE.devices[index], nbytes)
    storage._npu_binding = HostBinding(host, index, nbytes, memory)  # type: ignore[attr-defined]  # the binding rides on the storage object
    return storage


def _anchor(index: int) -> torch.Tensor:
    anchor = STATE.anchors.get(index)
    if anchor is None:
        anchor = _dlpack_anchor(index)
        STATE.anchors[index] = anchor
    return anchor


def _dlpack_anchor(index: int) -> torch.Tensor:
    # PyTorch offers no Python call that builds a TensorImpl on npu:i for i > 0
    # (create_empty_tensor is npu:0 only and set_ refuses cross-device storage).
    # DLPack's "extension device" maps to PrivateUse1, so an empty CPU capsule
    # relabelled (device_type 12, device_id i) imports as an npu:i tensor. It is
    # done once per device; every later tensor on npu:i derives from it.
    capsule = torch.utils.dlpack.to_dlpack(torch.empty(0, dtype=torch.uint8))
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = get_pointer(capsule, b"dltensor")
    # DLTensor starts with `void* data` followed by DLDevice {int32 type; int32 id}.
    device = (ctypes.c_int32 * 2).from_address(address + ctypes.sizeof(ctypes.c_void_p))
    device[0], device[1] = 12, index
    anchor = torch._C._from_dlpack(capsule)
    if anchor.device != STATE.devices[index]:
        raise RuntimeError(f"runtime_shim could not create a tensor on npu:{index}")
    return anchor


def _shell(index: int, dtype: torch.dtype) -> torch.Tensor:
    if index == 0:
        return _make_shell((0,), dtype)
    shell = _AS_STRIDED.redispatch_boxed(_CPU_KEYSET, _anchor(index), (0,), (1,), 0)
    return shell if dtype == torch.uint8 else _VIEW_DTYPE.redispatch_boxed(_CPU_KEYSET, shell, dtype)


_VIEW_DTYPE = torch.ops.aten.view.dtype._handle


def wrap_host(o: torch.Tensor, index: int, inputs: list[torch.UntypedStorage] | None = None) -> torch.Tensor:
    """Return an npu tensor (device ``index``) over the bytes of CPU tensor ``o``.

    If ``o`` shares memory with one of the npu storages in ``inputs`` the result
    uses that storage, so aliasing between inputs and outputs survives. ``o`` is
    entered in the storage's view cache: it *is* the CPU view of the result.
    """
    host = o.untyped_storage()
    ptr = host.data_ptr()
    storage = None
    if inputs and ptr:
        for candidate in inputs:
            if binding(candidate).ptr == ptr:
                storage = candidate
                break
    if storage is None:
        nbytes = host.nbytes()
        assert STATE.tracker is not None, "install() sets the tracker before any storage is made"
        memory = STATE.tracker.devices[index]
        if memory.allocated + nbytes > memory.capacity:
            memory.check(nbytes)
        storage = _storage_from_ptr(ptr, STATE.devices[index], nbytes)
        info = storage._npu_binding = HostBinding(host, index, nbytes, memory)  # type: ignore[attr-defined]  # as above
    else:
        info = binding(storage)
        index = info.index
        if host.nbytes() != info.nbytes:
            info = None  # a narrower CPU storage at the same address: not cached
    dtype = o.dtype
    size = o.size()
    stride = o.stride()
    offset = o.storage_offset()
    shell = _make_shell(_EMPTY, dtype) if index == 0 else _shell(index, dtype)
    _SET_STORAGE_CPU(_CPU_KEYSET, shell, storage, offset, size, stride)
    if info is not None:
        views = info.views
        if len(views) >= MAX_VIEWS:
            views.clear()
        views[(dtype, size, stride, offset)] = o
    return shell


_EMPTY = (0,)


def host_view(t: torch.Tensor) -> torch.Tensor:
    """Return a CPU tensor sharing ``t``'s memory, sizes, strides and offset."""
    info = binding(t.untyped_storage())
    dtype = t.dtype
    size = t.size()
    stride = t.stride()
    offset = t.storage_offset()
    key = (dtype, size, stride, offset)
    views = info.views
    view = views.get(key)
    if view is None:
        view = make_view(info, dtype, size, stride, offset)
        if len(views) >= MAX_VIEWS:
            views.clear()
        views[key] = view
    return view


def make_view(
    info: HostBinding,
    dtype: torch.dtype,
    size: Sequence[int],
    stride: Sequence[int],
    offset: int | torch.SymInt,
) -> torch.Tensor:
    """A fresh CPU tensor over ``info``'s host bytes with the given geometry."""
    # as_strided takes an absolute storage offset, so any CPU tensor of this
    # dtype over the host storage will do as the source: a cached view first
    # (usually the output the storage was made for), else a made-once base.
    for key, view in info.views.items():
        if key[0] is dtype:
            return view.as_strided(size, stride, offset)
    bases = info.bases
    if bases is None:
        bases = info.bases = {}
    base = bases.get(dtype)
    if base is None:
        base = torch.empty(0, dtype=dtype).set_(info.host)
        bases[dtype] = base
    return base.as_strided(size, stride, offset)
