"""torch_npu's additions to PyTorch's own API that ported scripts rely on.

torch_npu patches a few PyTorch objects when it is imported; a converted script uses them
without knowing. Each patch here reproduces one of them on the simulated device:
`storage.npu()` (checkpoint `map_location=lambda s, loc: s.npu(rank)`),
`torch.autograd.profiler.profile(use_npu=...)` (the porting guide's profiler form),
`tensor.record_stream(torch.npu.Stream)`, `torch.set_default_tensor_type("torch.npu.FloatTensor")`
and `torch.distributed.is_hccl_available()`. One more
keeps PyTorch's CPU behaviour where its PrivateUse1 path differs: tied parameters stay tied when
a module moves to the device.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import torch

_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def _marked(wrapper: Callable[..., Any]) -> Any:
    """``wrapper``, marked as runtime_shim's so that install() never wraps it twice."""
    wrapper._runtime_shim = True  # type: ignore[attr-defined]  # a marker on the function object
    return wrapper


def _device_index(device: Any) -> int:
    from runtime_shim import npu

    return npu._index(device)


def _untyped_storage_npu(
    self: torch.UntypedStorage, device: Any = None, non_blocking: bool = False
) -> torch.UntypedStorage:
    """Copy of this storage on an NPU (itself when it already lives there)."""
    index = _device_index(device)
    if self.device.type == "npu" and self.device.index == index:
        return self
    host = torch.empty(0, dtype=torch.uint8, device=self.device).set_(self, 0, (self.nbytes(),), (1,))
    return host.to(torch.device("npu", index), non_blocking=non_blocking).untyped_storage()


def _typed_storage_npu(
    self: torch.TypedStorage, device: Any = None, non_blocking: bool = False
) -> torch.TypedStorage:
    untyped = _untyped_storage_npu(self._untyped_storage, device, non_blocking)
    return torch.TypedStorage(wrap_storage=untyped, dtype=self.dtype, _internal=True)


def _accept_use_npu(init: _Fn) -> _Fn:
    @functools.wraps(init)
    def __init__(self: Any, *args: Any, use_npu: bool = False, **kwargs: Any) -> None:
        # Host-side events are all there is to record on the simulated device.
        init(self, *args, **kwargs)
        self.use_npu = use_npu

    return _marked(__init__)


def _record_stream_accepting_npu(record_stream: _Fn) -> _Fn:
    @functools.wraps(record_stream)
    def wrapper(self: torch.Tensor, stream: Any) -> None:
        from runtime_shim import npu

        if isinstance(stream, npu.Stream):
            return None  # simulated streams run synchronously: nothing can free the memory early
        return record_stream(self, stream)

    return _marked(wrapper)


def _keep_shared_parameters(apply: _Fn) -> _Fn:
    """Module._apply that keeps parameters shared between modules shared after a device move.

    For CPU and CUDA, PyTorch moves a parameter in place (`param.data = moved`), so tied weights
    (a GPT's token embedding and output head) stay one object. The npu's shallow-copy check
    (backend/registration.py) gives the npu the same in-place move; where PyTorch still makes a new
    Parameter per module (`torch.__future__.set_overwrite_module_params_on_conversion(True)`),
    this restores the sharing the module had before the move.
    """

    @functools.wraps(apply)
    def _apply(
        self: torch.nn.Module, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True
    ) -> Any:
        if not recurse or getattr(_apply_state, "busy", False):
            return apply(self, fn, recurse)
        owners: dict[int, list[tuple[torch.nn.Module, str]]] = {}
        for module in self.modules():
            for name, param in module._parameters.items():
                if param is not None:
                    owners.setdefault(id(param), []).append((module, name))
        _apply_state.busy = True
        try:
            result = apply(self, fn, recurse)
        finally:
            _apply_state.busy = False
        for places in owners.values():
            if len(places) > 1:
                first_module, first_name = places[0]
                shared = first_module._parameters[first_name]
                for module, name in places[1:]:
                    module._parameters[name] = shared
        return result

    return _marked(_apply)


_apply_state = threading.local()


def _type_accepting_npu(type_method: _Fn) -> _Fn:
    """`tensor.type(torch.npu.FloatTensor)` / `.type("torch.npu.LongTensor")`, as for CUDA types."""

    @functools.wraps(type_method)
    def type(self: torch.Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        from runtime_shim import npu

        target = dtype
        if isinstance(target, str) and target.startswith("torch.npu."):
            target = getattr(npu, target.rsplit(".", 1)[1], target)
        if isinstance(target, npu._TypedTensorMeta):
            index = self.device.index if self.device.type == "npu" else npu.current_device()
            return self.to(device=torch.device("npu", index), dtype=target.dtype, non_blocking=non_blocking)
        return type_method(self, dtype, non_blocking, **kwargs)

    return _marked(type)


def _default_type_accepting_npu(set_default_tensor_type: _Fn) -> _Fn:
    """`torch.set_default_tensor_type("torch.npu.FloatTensor")`: npu float tensors by default.

    PyTorch's own function accepts only its registered CPU/CUDA types; an npu type sets the default
    dtype and the default device, and any other type afterwards clears that device again.
    """

    @functools.wraps(set_default_tensor_type)
    def patched(t: Any) -> None:
        from runtime_shim import npu

        target = t
        if isinstance(target, str) and target.startswith("torch.npu."):
            target = getattr(npu, target.rsplit(".", 1)[1], target)
        if isinstance(target, npu._TypedTensorMeta):
            if not target.dtype.is_floating_point:
                raise TypeError(
                    "invalid type object: only floating-point types are supported as the default type"
                )
            torch.set_default_dtype(target.dtype)
            torch.set_default_device(torch.device("npu", npu.current_device()))
            _default_device_state.npu = True
            return
        set_default_tensor_type(t)
        if getattr(_default_device_state, "npu", False):
            torch.set_default_device(None)
            _default_device_state.npu = False

    return _marked(patched)


def _bare_npu(device: Any) -> bool:
    if isinstance(device, str):
        return device == "npu"
    return isinstance(device, torch.device) and device.type == "npu" and device.index is None


def _to_current_npu(to: _Fn) -> _Fn:
    """``Tensor.to`` that reads a bare ``"npu"`` as the current device, as torch_npu does.

    Factory calls (``device="npu"``) already follow ``torch.npu.set_device``; ``to`` gets its
    index from the device guard of PyTorch's Python backend API, which always answers 0.
    """
    from runtime_shim.runtime.state import STATE

    @functools.wraps(to)
    def wrapper(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        current = STATE.current
        if current:
            if args and _bare_npu(args[0]):
                args = (torch.device("npu", current), *args[1:])
            elif _bare_npu(kwargs.get("device")):
                kwargs["device"] = torch.device("npu", current)
        return to(self, *args, **kwargs)

    return _marked(wrapper)


_default_device_state = threading.local()


def install() -> None:
    """Apply the patches (idempotent)."""
    if not hasattr(torch.version, "cann"):
        # torch_npu sets the CANN version here; None is its value when none is known (its own
        # code tests `torch.version.cann is not None`), and the simulated device has no CANN.
        torch.version.cann = None  # type: ignore[attr-defined]  # torch_npu's attribute
    if not getattr(torch.set_default_tensor_type, "_runtime_shim", False):
        torch.set_default_tensor_type = _default_type_accepting_npu(torch.set_default_tensor_type)
    if not getattr(torch.Tensor.to, "_runtime_shim", False):
        torch.Tensor.to = _to_current_npu(torch.Tensor.to)  # type: ignore[method-assign]  # the patch
    if not getattr(torch.Tensor.type, "_runtime_shim", False):
        torch.Tensor.type = _type_accepting_npu(torch.Tensor.type)  # type: ignore[method-assign]  # the patch
    if not getattr(torch.nn.Module._apply, "_runtime_shim", False):
        torch.nn.Module._apply = _keep_shared_parameters(torch.nn.Module._apply)  # type: ignore[method-assign]  # the patch
    if not getattr(torch.Tensor.record_stream, "_runtime_shim", False):
        torch.Tensor.record_stream = _record_stream_accepting_npu(  # type: ignore[method-assign]  # the patch
            torch.Tensor.record_stream
        )
    if getattr(torch.UntypedStorage, "npu", None) is not _untyped_storage_npu:
        torch.UntypedStorage.npu = _untyped_storage_npu  # type: ignore[attr-defined]  # torch_npu's method
        torch.TypedStorage.npu = _typed_storage_npu  # type: ignore[attr-defined]  # torch_npu's method
    profile = torch.autograd.profiler.profile
    if not getattr(profile.__init__, "_runtime_shim", False):
        profile.__init__ = _accept_use_npu(profile.__init__)  # type: ignore[method-assign]  # the patch
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - depends on the torch build
        return
    if dist.is_available() and not hasattr(dist, "is_hccl_available"):
        dist.is_hccl_available = lambda: True  # type: ignore[attr-defined]  # torch_npu's function
