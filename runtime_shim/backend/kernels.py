"""PrivateUse1 kernels of the simulated npu: npu arguments re-viewed as CPU tensors.

Each kernel is specialised from the operator schema once (which argument
positions hold tensors, which are written, which returns alias which argument),
so the per-call work is a short loop: cached CPU views in, one direct CPU
redispatch, outputs wrapped. See device.py for the overall design.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from runtime_shim.runtime import storage as _dev
from runtime_shim.runtime.state import DEVICE_TYPE as _DEVICE_TYPE
from runtime_shim.runtime.state import STATE, device_error
from runtime_shim.runtime.storage import MAX_VIEWS as _MAX_VIEWS
from runtime_shim.runtime.storage import host_view, new_storage, wrap_host
from runtime_shim.runtime.storage import make_view as _make_view

_Tensor = torch.Tensor
_CPU = torch.device("cpu")
_CPU_KEYSET = _dev._CPU_KEYSET
_SET_STORAGE = _dev._SET_STORAGE

_TENSOR_TYPES = {"Tensor", "Optional[Tensor]"}
_LIST_TYPES = {"List[Tensor]", "List[Optional[Tensor]]", "Optional[List[Tensor]]"}
_DEVICE_TYPES = {"Device", "Optional[Device]"}

# Ops that legitimately take tensors from two devices (real accelerators allow
# these too: copies, CPU index tensors for advanced indexing).
_MIXED_OK = {
    "copy_",
    "_copy_from",
    "_copy_from_and_resize",
    "_to_copy",
    "index.Tensor",
    "index_put_",
    "index_put",
    "_index_put_impl_",
    "_index_put_impl",
    "set_",
}
# Metadata-only in-place ops: their CPU kernel must edit the npu tensor itself,
# not a CPU view of it.
_METADATA_INPLACE = {
    "as_strided_",
    "squeeze_",
    "unsqueeze_",
    "t_",
    "transpose_",
    "swapdims_",
    "swapaxes_",
    "detach_",
}


# What converting one call's arguments found, kept in a 5-slot list (indexing a list is the
# cheapest state on this per-op path): [0] npu index of the first npu tensor (-1: none yet);
# [1] the other device a mixed-device call named (None: none); [2] an explicit non-npu target
# device; [3] an explicit npu target index (-1: none); [4] a Python scalar among tensor arguments.


def _convert(a: Any, scan: list[Any], storages: list[torch.UntypedStorage]) -> Any:
    """One tensor-typed argument: npu tensors become CPU views; others are checked."""
    if not isinstance(a, _Tensor):
        # None, or a wrapped Python scalar (the dispatcher unwraps those). A
        # scalar must go back to the CPU kernel as a wrapped-number tensor,
        # which only the schema-parsing call path (OpOverload) rebuilds.
        if a is not None:
            scan[4] = True
        return a
    storage = a.untyped_storage()
    info = getattr(storage, "_npu_binding", None)
    if info is None and a.device.type == _DEVICE_TYPE:
        info = _dev.native_binding(storage)  # a storage the native kernels made
    if info is not None:
        index = info.index
        if scan[0] != index:
            if scan[0] < 0:
                scan[0] = index
            else:
                scan[1] = f"{_DEVICE_TYPE}:{index}"
        storages.append(storage)
        # device.host_view, inlined: this runs for every tensor argument of every op
        dtype = a.dtype
        size = a.size()
        stride = a.stride()
        offset = a.storage_offset()
        key = (dtype, size, stride, offset)
        views = info.views
        view = views.get(key)
        if view is None:
            view = _make_view(info, dtype, size, stride, offset)
            if len(views) >= _MAX_VIEWS:
                views.clear()
            views[key] = view
        return view
    device = a.device
    if device.type == _DEVICE_TYPE:
        # An npu tensor whose storage is not ours: the zero-byte placeholder
        # PyTorch makes before set_. It holds no data.
        if scan[0] < 0:
            scan[0] = device.index or 0
        return torch.empty(a.size(), dtype=a.dtype)
    # Zero-dim CPU tensors are accepted as scalars, as on CUDA.
    if a.dim() != 0:
        scan[1] = str(device)
    return a


def _convert_list(values: Any, scan: list[Any], storages: list[torch.UntypedStorage]) -> Any:
    if values is None:
        return None
    return [_convert(v, scan, storages) for v in values]


def _convert_device(d: Any, scan: list[Any]) -> Any:
    if d is None:
        return None
    d = torch.device(d)
    if d.type == _DEVICE_TYPE:
        # An explicit target device decides where the result lives.
        scan[3] = STATE.current if d.index is None else d.index
        return _CPU
    scan[2] = True  # an explicit non-npu target device: the result stays there
    return d


def _place(arg: Any, index: int, positional: list[int], keyword: list[str]) -> None:
    """File a schema argument under its keyword name or its position."""
    if arg.kwarg_only:
        keyword.append(arg.name)
    else:
        positional.append(index)


class _Spec:
    """What a kernel needs to know about one operator, read from its schema."""

    def __init__(self, op: torch._ops.OpOverload) -> None:
        schema = op._schema
        self.name = op.__name__ if hasattr(op, "__name__") else str(op)
        self.qualified = schema.name.split("::", 1)[-1] + (
            f".{schema.overload_name}" if schema.overload_name else ""
        )
        base = schema.name.split("::", 1)[-1]
        self.base = base
        self.tensor_pos: list[int] = []
        self.list_pos: list[int] = []
        self.device_pos: list[int] = []
        self.tensor_kw: list[str] = []
        self.list_kw: list[str] = []
        self.device_kw: list[str] = []
        self.written_pos: list[int] = []
        self.written_kw: list[str] = []
        alias_of: dict[str, tuple[str, Any]] = {}
        for i, arg in enumerate(schema.arguments):
            kind = str(arg.type)
            if kind in _TENSOR_TYPES:
                _place(arg, i, self.tensor_pos, self.tensor_kw)
            elif kind in _LIST_TYPES:
                _place(arg, i, self.list_pos, self.list_kw)
            elif kind in _DEVICE_TYPES:
                _place(arg, i, self.device_pos, self.device_kw)
            info = arg.alias_info
            if info is not None:
                where = ("kw", arg.name) if arg.kwarg_only else ("pos", i)
                for symbol in info.before_set:
                    alias_of[symbol] = where
                if info.is_write:
                    if arg.kwarg_only:
                        self.written_kw.append(arg.name)
                    else:
                        self.written_pos.append(i)
        self.returns: list[tuple[str, Any]] = []
        self.is_view = False
        for ret in schema.returns:
            info = ret.alias_info
            kind = str(ret.type)
            if info is not None and info.before_set:
                symbol = next(iter(info.before_set))
                self.returns.append(("alias", alias_of.get(symbol)))
                if not info.is_write:
                    self.is_view = True
            elif kind == "Tensor":
                self.returns.append(("tensor", None))
            elif kind in _LIST_TYPES:
                self.returns.append(("list", None))
            else:
                self.returns.append(("value", None))
        self.mutable = bool(self.written_pos or self.written_kw)
        self.mixed_ok = base in _MIXED_OK or self.qualified in _MIXED_OK


def _counter(name: str) -> list[int]:
    return STATE.op_counts.setdefault(name, [0])


def _first_call(name: str, args: tuple[Any, ...] = ()) -> None:
    hook = STATE.on_first_call
    if hook is not None:
        hook(name, args)


class _Level(threading.local):
    """How many NPU-level kernels (see npu_level) this thread is running: the ops reached inside
    one are the simulation's way of computing it, not operators a real NPU would dispatch. Per
    thread, as the native part keeps it: another thread's ops are the script's own."""

    depth = 0


_LEVEL = _Level()

#: Whether NPU-level kernels and routes in C++ are registered (dispatch.set_dispatch: while the
#: native path serves): only then can one run that this module's depth does not count.
NATIVE_LEVELS = [False]


def nested() -> bool:
    """Whether this thread runs an NPU-level kernel: this module's or a native one (csrc/)."""
    if _LEVEL.depth:
        return True
    return NATIVE_LEVELS[0] and STATE.native.npu_level_depth() != 0


def _note(counter: list[int], name: str, args: tuple[Any, ...]) -> None:
    """Count one call of ``name`` and check its first one, unless it is part of an NPU-level
    kernel's computation (see nested)."""
    if nested():
        return
    counter[0] += 1
    if counter[0] == 1:
        _first_call(name, args)


def npu_level(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``fn``, the simulated kernel of ``name``, as an op torch_npu dispatches itself.

    ``name`` is counted (and checked) as the op; what ``fn`` calls to compute it is not.
    """
    counter = _counter(name)
    level = _LEVEL

    def kernel(*args: Any, **kwargs: Any) -> Any:
        _note(counter, name, args)
        native = STATE.native  # its kernels skip what they run in here as the check does
        level.depth += 1
        if native is not None:
            native.npu_level(1)
        try:
            return fn(*args, **kwargs)
        finally:
            level.depth -= 1
            if native is not None:
                native.npu_level(-1)

    return kernel


def build_kernel(op: torch._ops.OpOverload) -> Callable[..., Any]:
    """Return the PrivateUse1 kernel for ``op`` (specialised from its schema)."""
    spec = _Spec(op)
    special = _SPECIAL.get(spec.qualified) or _SPECIAL.get(spec.base)
    if special is not None:
        return _counted(spec.qualified, special(op))
    if spec.base in _METADATA_INPLACE or (spec.is_view and not spec.mutable):
        return _redispatch_kernel(op, spec.qualified)
    return _generic_kernel(op, spec)


def _counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    counter = _counter(name)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        _note(counter, name, args)
        return fn(*args, **kwargs)

    return kernel


def _cpu_call(op: torch._ops.OpOverload) -> Callable[..., Any]:
    """Call ``op``'s CPU kernel directly.

    Redispatching with the CPU key set goes straight to the kernel the CPU
    dispatch table holds for the op (the CPU kernel, or the composite one the
    CPU slot inherits): the same kernel a call on CPU tensors below autograd
    reaches, for about half the cost of ``OpOverload.__call__`` (which parses
    the arguments against the schema and computes the dispatch key again).
    """
    redispatch = op._handle.redispatch_boxed
    keyset = _CPU_KEYSET

    def call(*args: Any, **kwargs: Any) -> Any:
        return redispatch(keyset, *args, **kwargs)

    return call


def _redispatch_kernel(op: torch._ops.OpOverload, name: str | None = None) -> Callable[..., Any]:
    # View and metadata ops: the CPU kernel never touches data, so it runs on the
    # npu tensors as they are and the result keeps the npu storage.
    redispatch = op._handle.redispatch_boxed
    keyset = _CPU_KEYSET
    if name is None:

        def kernel(*args: Any, **kwargs: Any) -> Any:
            return redispatch(keyset, *args, **kwargs)

        return kernel
    counter = _counter(name)

    def counted_kernel(*args: Any, **kwargs: Any) -> Any:
        _note(counter, name, args)
        return redispatch(keyset, *args, **kwargs)

    return counted_kernel


def _generic_kernel(
    op: torch._ops.OpOverload, spec: _Spec, fn: Callable[..., Any] | None = None
) -> Callable[..., Any]:
    # op_call: the schema-parsing call path, for the (rarer) calls with Python
    # scalars in tensor positions; redispatch: the direct CPU call.
    op_call = op._op if hasattr(op, "_op") else op
    if fn is None:
        redispatch = op._handle.redispatch_boxed
        fn = _cpu_call(op)
    else:
        redispatch = None
        op_call = fn
    keyset = _CPU_KEYSET
    name = spec.qualified
    counter = _counter(name)
    tensor_pos, list_pos, device_pos = spec.tensor_pos, spec.list_pos, spec.device_pos
    tensor_kw, list_kw, device_kw = spec.tensor_kw, spec.list_kw, spec.device_kw
    returns = spec.returns
    single_tensor = len(returns) == 1 and returns[0][0] == "tensor"
    # A single return that is one of the positional arguments (in-place ops).
    alias_pos = -1
    if (
        len(returns) == 1
        and returns[0][0] == "alias"
        and returns[0][1] is not None
        and returns[0][1][0] == "pos"
    ):
        alias_pos = returns[0][1][1]
    mixed_ok = spec.mixed_ok
    written_kw = spec.written_kw
    mutable = spec.mutable
    convert, convert_list = _convert, _convert_list
    # Most ops take tensors only at fixed positions: no lists, no devices, no
    # keyword tensors, no out=. Those take a short path (their keyword
    # arguments, if any, are plain values and pass through untouched).
    simple = not (list_pos or device_pos or tensor_kw or list_kw or device_kw or (mutable and written_kw))

    def numbers_call(*cargs: Any, **ckwargs: Any) -> Any:
        # A Python number in a Tensor slot: the OpOverload call turns it back into a wrapped
        # number for the ops PyTorch's argument parser allows that for (add, mul, ...); for the
        # others (bitwise_xor.Tensor from `t ^ 6`) it becomes a 0-dim tensor of the dtype a
        # wrapped number promotes like.
        try:
            return op_call(*cargs, **ckwargs)
        except RuntimeError as exc:
            if "Unable to cast" not in str(exc):
                raise
        fixed = [_number_tensor(a) if i in tensor_pos else a for i, a in enumerate(cargs)]
        return op_call(*fixed, **ckwargs)

    def general(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        scan: list[Any] = [-1, None, False, -1, False]  # slots: see above _convert
        storages: list[torch.UntypedStorage] = []
        n = len(args)
        cargs = list(args)
        for i in tensor_pos:
            if i < n:
                cargs[i] = convert(cargs[i], scan, storages)
        for i in list_pos:
            if i < n:
                cargs[i] = convert_list(cargs[i], scan, storages)
        for i in device_pos:
            if i < n:
                cargs[i] = _convert_device(cargs[i], scan)
        ckwargs = kwargs
        if kwargs:
            ckwargs = dict(kwargs)
            for key in tensor_kw:
                if key in kwargs:
                    ckwargs[key] = convert(kwargs[key], scan, storages)
            for key in list_kw:
                if key in kwargs:
                    ckwargs[key] = convert_list(kwargs[key], scan, storages)
            for key in device_kw:
                if key in kwargs:
                    ckwargs[key] = _convert_device(kwargs[key], scan)
        if scan[1] is not None and not mixed_ok:
            raise device_error(f"{_DEVICE_TYPE}:{max(scan[0], 0)}", scan[1])
        index = scan[3] if scan[3] >= 0 else scan[0] if scan[0] >= 0 else STATE.current
        call = numbers_call if scan[4] else fn
        if mutable and written_kw:
            out = _call_with_out_args(call, cargs, ckwargs, kwargs, written_kw, index, storages)
        else:
            out = call(*cargs, **ckwargs)
        if scan[2]:
            return out  # explicit non-npu target device (e.g. .to("cpu"))
        if single_tensor:
            return wrap_host(out, index, storages)
        return _wrap_returns(out, returns, args, kwargs, index, storages)

    if not simple:

        def kernel(*args: Any, **kwargs: Any) -> Any:
            _note(counter, name, args)
            return general(args, kwargs)

        return kernel

    def simple_kernel(*args: Any, **kwargs: Any) -> Any:
        _note(counter, name, args)
        # kwargs here are plain values (no tensors, lists or devices): they pass through.
        scan: list[Any] = [-1, None, False, -1, False]  # slots: see above _convert
        storages: list[torch.UntypedStorage] = []
        n = len(args)
        cargs = list(args)
        for i in tensor_pos:
            if i < n:
                cargs[i] = convert(cargs[i], scan, storages)
        if scan[1] is not None and not mixed_ok:
            raise device_error(f"{_DEVICE_TYPE}:{max(scan[0], 0)}", scan[1])
        if scan[4]:
            out = numbers_call(*cargs, **kwargs)
        elif redispatch is not None:
            out = redispatch(keyset, *cargs, **kwargs)
        else:
            out = fn(*cargs, **kwargs)
        if alias_pos >= 0:
            return args[alias_pos]
        index = scan[0] if scan[0] >= 0 else STATE.current
        if single_tensor:
            return wrap_host(out, index, storages)
        return _wrap_returns(out, returns, args, kwargs, index, storages)

    return simple_kernel


def _number_tensor(value: Any) -> Any:
    """A Python number as the 0-dim CPU tensor it stands for in type promotion; others unchanged."""
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.get_default_dtype())
    if isinstance(value, complex):
        return torch.tensor(value)
    return value


def _wrap_returns(
    out: Any, returns: Any, args: tuple[Any, ...], kwargs: dict[str, Any], index: int, storages: list[Any]
) -> Any:
    if not returns:
        return out
    single = len(returns) == 1
    values = (out,) if single else out
    result = []
    for value, (kind, source) in zip(values, returns):
        if kind == "alias" and source is not None:
            where, key = source
            result.append(args[key] if where == "pos" else kwargs[key])
        elif kind == "tensor" or kind == "alias":
            result.append(value if not isinstance(value, _Tensor) else wrap_host(value, index, storages))
        elif kind == "list":
            result.append([wrap_host(v, index, storages) if isinstance(v, _Tensor) else v for v in value])
        else:
            result.append(value)
    if single:
        return result[0]
    return tuple(result)


def _call_with_out_args(
    fn: Callable[..., Any],
    cargs: list[Any],
    ckwargs: dict[str, Any],
    kwargs: dict[str, Any],
    written_kw: Any,
    index: int,
    storages: list[Any],
) -> Any:
    # out= tensors: the CPU kernel may resize them. Resizing a host storage in
    # place would leave its npu storage pointing at freed memory, so the CPU
    # kernel gets out= views over fixed-size storages; if it needs to grow one,
    # the call is redone into fresh CPU tensors and the npu outs are resized.
    fixed = dict(ckwargs)
    for key in written_kw:
        value = ckwargs.get(key)
        if (
            isinstance(value, _Tensor)
            and isinstance(kwargs.get(key), _Tensor)
            and kwargs[key].device.type == _DEVICE_TYPE
        ):
            fixed[key] = _fixed_size_view(value)
        elif isinstance(value, list):
            fixed[key] = [_fixed_size_view(v) if isinstance(v, _Tensor) else v for v in value]
    try:
        return fn(*cargs, **fixed)
    except RuntimeError as exc:
        if "not resizable" not in str(exc):
            raise
    fresh = dict(ckwargs)
    for key in written_kw:
        value = ckwargs.get(key)
        if isinstance(value, _Tensor):
            fresh[key] = torch.empty(0, dtype=value.dtype)
    out = fn(*cargs, **fresh)
    for key in written_kw:
        target = kwargs.get(key)
        result = fresh[key]
        if isinstance(target, _Tensor) and isinstance(result, _Tensor):
            if target.device.type == _DEVICE_TYPE:
                target.resize_(result.shape)
                host_view(target).copy_(result)
            else:
                target.resize_(result.shape).copy_(result)
    return out


def _fixed_size_view(cpu: torch.Tensor) -> torch.Tensor:
    storage = cpu.untyped_storage()
    fixed = torch._C._construct_storage_from_data_pointer(storage.data_ptr(), _CPU, storage.nbytes())
    view = torch.empty(0, dtype=cpu.dtype)
    view.set_(fixed, cpu.storage_offset(), cpu.size(), cpu.stride())
    return view


# ------------------------------------------------------------------------ special kernels


def _k_empty(op: torch._ops.OpOverload) -> Callable[..., Any]:
    def kernel(
        size: Sequence[int],
        dtype: torch.dtype | None = None,
        layout: torch.layout | None = None,
        device: Any = None,
        pin_memory: bool | None = None,
        memory_format: torch.memory_format | None = None,
    ) -> torch.Tensor:
        index = _index_of(device)
        dtype = dtype or torch.get_default_dtype()
        nbytes = math.prod(size) * _itemsize(dtype)
        STATE.tracker.devices[index].check(nbytes)  # type: ignore[union-attr]  # set by install()
        host = torch.empty(size, dtype=dtype, layout=layout, memory_format=memory_format)
        return wrap_host(host, index)

    return kernel


def _k_empty_strided(op: torch._ops.OpOverload) -> Callable[..., Any]:
    def kernel(
        size: Sequence[int],
        stride: Sequence[int],
        dtype: torch.dtype | None = None,
        layout: torch.layout | None = None,
        device: Any = None,
        pin_memory: bool | None = None,
    ) -> torch.Tensor:
        index = _index_of(device)
        dtype = dtype or torch.get_default_dtype()
        host = torch.empty_strided(size, stride, dtype=dtype, layout=layout)
        return wrap_host(host, index)

    return kernel


def _cpu_side(t: Any) -> Any:
    """``t`` itself if it is a CPU tensor (or not a tensor), else its CPU view."""
    if not isinstance(t, _Tensor):
        return t
    if getattr(t.untyped_storage(), "_npu_binding", None) is not None or t.device.type == _DEVICE_TYPE:
        return host_view(t)
    return t


def _k_copy_from(op: torch._ops.OpOverload) -> Callable[..., Any]:
    def kernel(self: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        _cpu_side(dst).copy_(_cpu_side(self))
        return dst

    return kernel


def _k_copy_from_and_resize(op: torch._ops.OpOverload) -> Callable[..., Any]:
    def kernel(self: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        dst.resize_(self.shape)
        _cpu_side(dst).copy_(_cpu_side(self))
        return dst

    return kernel


def _k_copy(op: torch._ops.OpOverload) -> Callable[..., Any]:
    def kernel(self: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        _cpu_side(self).copy_(_cpu_side(src))
        return self

    return kernel


def _k_resize(op: torch._ops.OpOverload) -> Callable[..., Any]:
    def kernel(
        self: torch.Tensor, size: Sequence[int], memory_format: torch.memory_format | None = None
    ) -> torch.Tensor:
        resize_npu(self, tuple(size), memory_format)
        return self

    return kernel


def resize_npu(
    t: torch.Tensor, size: Sequence[int], memory_format: torch.memory_format | None = None
) -> None:
    """Resize npu tensor ``t`` in place, growing its storage by reallocation if needed."""
    memory_format = memory_format or torch.contiguous_format
    strides = torch.empty(size, device="meta", memory_format=memory_format).stride()
    itemsize = _itemsize(t.dtype)
    numel = math.prod(size)
    needed = (t.storage_offset() + numel) * itemsize if numel else 0
    storage = t.untyped_storage()
    info = getattr(storage, "_npu_binding", None) or _dev.native_binding(storage)
    if info is None or needed > storage.nbytes():
        index = info.index if info is not None else (t.device.index or 0)
        host = torch.empty(needed, dtype=torch.uint8).untyped_storage()
        if info is not None and storage.nbytes():
            # resize_ keeps the old contents; a fresh buffer gets them copied.
            keep = min(storage.nbytes(), needed)
            torch.empty(0, dtype=torch.uint8).set_(host)[:keep].copy_(
                torch.empty(0, dtype=torch.uint8).set_(info.host)[:keep]
            )
        storage = new_storage(host, index)
    _SET_STORAGE.redispatch_boxed(_CPU_KEYSET, t, storage, t.storage_offset(), size, strides)


def _k_set_empty(op: torch._ops.OpOverload) -> Callable[..., Any]:
    def kernel(self: torch.Tensor) -> torch.Tensor:
        index = self.device.index or 0
        storage = new_storage(torch.empty(0, dtype=torch.uint8).untyped_storage(), index)
        _SET_STORAGE.redispatch_boxed(_CPU_KEYSET, self, storage, 0, (0,), (1,))
        return self

    return kernel


def _k_record_stream(op: torch._ops.OpOverload) -> Callable[..., Any]:
    # Streams of the simulated device are synchronous, so there is nothing to
    # keep alive past its use; recording is therefore complete as soon as done.
    def kernel(self: torch.Tensor, stream: Any) -> None:
        return None

    return kernel


def _k_convolution(op: torch._ops.OpOverload) -> Callable[..., Any]:
    # Non-CPU/CUDA backends are routed to convolution_overrideable. Running the
    # CPU convolution on host views picks the same CPU algorithm a CPU run picks.
    return _generic_kernel(op, _Spec(op), _cpu_call(torch.ops.aten.convolution.default))


def _k_convolution_backward(op: torch._ops.OpOverload) -> Callable[..., Any]:
    backward = _cpu_call(torch.ops.aten.convolution_backward.default)

    def compute(
        grad_output: Any,
        input: Any,
        weight: torch.Tensor,
        stride: Any,
        padding: Any,
        dilation: Any,
        transposed: bool,
        output_padding: Any,
        groups: int,
        output_mask: Any,
    ) -> Any:
        out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
        return backward(
            grad_output,
            input,
            weight,
            [out_channels],
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
            output_mask,
        )

    return _generic_kernel(op, _Spec(op), compute)


def _k_flash_attention(op: torch._ops.OpOverload) -> Callable[..., Any]:
    # The CUDA flash-attention op, which DTensor shards (tensor/sequence parallel attention):
    # computed by the CPU's flash kernel, the one an unsharded npu SDPA call uses, so sharded
    # and unsharded attention round alike. Dropout is not simulated on this path.
    forward = _cpu_call(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default)

    def compute(
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        return_debug_mask: bool = False,
        *,
        scale: float | None = None,
    ) -> Any:
        if dropout_p:
            raise NotImplementedError(
                "_scaled_dot_product_flash_attention with dropout_p > 0 on the npu is not simulated by runtime_shim"
            )
        output, logsumexp = forward(query, key, value, 0.0, is_causal, scale=scale)
        # The outputs flash attention leaves unused without dropout or nesting are 0-dim, as
        # on CUDA (DTensor requires it of outputs it does not shard).
        none = query.new_empty(())
        seed = torch.empty((), dtype=torch.uint64)
        return output, logsumexp, none, none, query.shape[-2], key.shape[-2], seed, seed, none

    return _generic_kernel(op, _Spec(op), compute)


def _k_flash_attention_backward(op: torch._ops.OpOverload) -> Callable[..., Any]:
    backward = _cpu_call(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default)

    def compute(
        grad_out: Any, query: Any, key: Any, value: Any, out: Any, logsumexp: Any, cum_seq_q: Any,
        cum_seq_k: Any, max_q: Any, max_k: Any, dropout_p: float, is_causal: bool, philox_seed: Any,
        philox_offset: Any, *, scale: float | None = None,
    ) -> Any:  # fmt: skip
        return backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, scale=scale)

    return _generic_kernel(op, _Spec(op), compute)


def _index_of(device: Any) -> int:
    if device is None:
        return STATE.current
    device = torch.device(device)
    return STATE.current if device.index is None else device.index


_ITEMSIZE: dict[torch.dtype, int] = {}


def _itemsize(dtype: torch.dtype) -> int:
    size = _ITEMSIZE.get(dtype)
    if size is None:
        size = _ITEMSIZE[dtype] = torch.empty(0, dtype=dtype).element_size()
    return size


_SPECIAL: dict[str, Callable[[torch._ops.OpOverload], Callable[..., Any]]] = {
    "empty.memory_format": _k_empty,
    "empty_strided": _k_empty_strided,
    "_copy_from": _k_copy_from,
    "_copy_from_and_resize": _k_copy_from_and_resize,
    "copy_": _k_copy,
    "resize_": _k_resize,
    "set_": _k_set_empty,
    "record_stream": _k_record_stream,
    "convolution_overrideable": _k_convolution,
    "convolution_backward_overrideable": _k_convolution_backward,
    "_scaled_dot_product_flash_attention": _k_flash_attention,
    "_scaled_dot_product_flash_attention_backward": _k_flash_attention_backward,
}
# The storage/tensor variants of set_ only edit metadata: their CPU kernels run
# on the npu tensor directly (and refuse a CPU storage, as a real device does).
for _name in ("set_.source_Storage", "set_.source_Storage_storage_offset", "set_.source_Tensor"):
    _SPECIAL[_name] = _redispatch_kernel

# Composite ops that would otherwise reach the device as two or three Python
# round trips; giving them a direct kernel is purely a speed-up.
DIRECT_COMPOSITES = (
    "clone",
    "copy_",
    "_to_copy",
    "fill_.Scalar",
    "zero_",
    "record_stream",
    "convolution_overrideable",
    "convolution_backward_overrideable",
)
