"""Install the simulated npu into PyTorch: the one place where the device is registered.

``install()`` renames PrivateUse1 to ``npu`` and makes every dispatcher registration the device
needs, in order: the per-op kernels (kernels.py) and the fallback, in-place module moves, host
pinning, the recurrent-layer kernels (rnn.py) and the autocast policy (autocast/policy.py).
Registrations made later on purpose: the SDPA/dropout choice (attention.py, at activation)
and the operator check's NPU-level recorders (diagnostics/opcheck.py, when the check is
configured). Every library is made and held by libraries.py; the storage constructor that npu
storages need is a patch of torch (patches/storage.py).
"""

from __future__ import annotations

import itertools
import os
import types
from collections.abc import Callable
from typing import Any

import torch
from torch._C import DispatchKey, DispatchKeySet
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

from runtime_shim.backend import kernels as _kernels
from runtime_shim.backend import libraries
from runtime_shim.runtime import allocator as _memory
from runtime_shim.runtime.state import DEVICE_TYPE, STATE

DEFAULT_DEVICE_COUNT = 8


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    """PrivateUse1 hooks: the simulated device is always built and available."""

    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):
    """Device guard of the simulated device (names the device type only)."""

    # PyTorch asks for the type on every device-guarded op (several times per
    # autograd node); a C-level callable answers without a Python frame.
    # (A builtin bound method is not a descriptor, so it is called with no
    # arguments and returns the constant.)
    type_ = itertools.repeat(torch._C._autograd.DeviceType.PrivateUse1).__next__  # type: ignore[assignment]  # a C callable for the method


def device_count_from_env() -> int:
    """Number of simulated devices.

    RUNTIME_SHIM_DEVICE_COUNT wins; else ASCEND_RT_VISIBLE_DEVICES (the variable
    torch_npu honours) is counted; else 8, the size of an Ascend training node.
    """
    explicit = os.environ.get("RUNTIME_SHIM_DEVICE_COUNT")
    if explicit:
        return max(1, int(explicit))
    visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    if visible:
        return max(1, len([v for v in visible.split(",") if v.strip()]))
    return DEFAULT_DEVICE_COUNT


def install(backend_module: types.ModuleType) -> None:
    """Rename PrivateUse1 to ``npu`` and register everything the device needs.

    ``backend_module`` becomes ``torch.npu``. Idempotent within a process.
    """
    if STATE.installed:
        return
    count = device_count_from_env()
    STATE.device_count = count
    from runtime_shim.backend import native

    STATE.native = native.load()
    STATE.tracker = _memory.MemoryTracker(count, _memory.capacity_from_env(), STATE.native)
    if STATE.native is None:
        _setup_privateuseone_for_python_backend(
            DEVICE_TYPE, backend_module=backend_module, hook=_Hooks(), device_guard=_Guard()
        )
    else:
        # PyTorch takes one hooks object per process: the native one, registered before the
        # rest of what the Python backend API sets up (in its order).
        STATE.native.register_hooks()
        torch.utils.rename_privateuse1_backend(DEVICE_TYPE)
        torch.utils.generate_methods_for_privateuse1_backend()
        torch._register_device_module(DEVICE_TYPE, backend_module)
        # The guard in C++ too: PyTorch's Python guard asks Python for the device type on
        # every guarded call (several per op and per autograd node), each taking the GIL.
        if not STATE.native.register_guard():
            torch._C._acc.register_python_privateuseone_device_guard(_Guard())
    STATE.devices = [torch.device(DEVICE_TYPE, i) for i in range(count)]
    _register_kernels()
    _register_shallow_copy_check()
    if STATE.native is None:
        _register_host_pinning()
    from runtime_shim.backend import rnn

    rnn.install()
    # The autograd engine runs a non-CPU device's backward on a worker thread,
    # so every Python kernel would hand the GIL between threads; running it on
    # the calling thread (as for CPU) costs nothing and removes that overhead.
    torch._C._set_multithreading_enabled(False)
    STATE.installed = True


def _op_from_name(qualified: str) -> torch._ops.OpOverload:
    name, _, overload = qualified.partition(".")
    packet = getattr(torch.ops.aten, name)
    return getattr(packet, overload or "default")


# Tensor-list ops whose generic kernel is a composite per-tensor loop: one
# direct kernel replaces one Python round trip per tensor in the list.
_LIST_OP_PREFIXES = ("_foreach_", "_fused_", "_amp_")


def _register_kernels() -> None:
    from runtime_shim.backend import dispatch

    library = libraries.make("kernels")
    # With the native part loaded, the ops a native kernel can serve are registered by dispatch.py
    # (native or Python kernels, switchable); the others get their Python kernel here.
    switchable: list[tuple[str, torch._ops.OpOverload]] = []
    done: set[str] = set()

    def add(qualified: str, op: torch._ops.OpOverload) -> None:
        done.add(qualified)
        if STATE.native is not None and dispatch.eligible(op):
            switchable.append((qualified, op))
        else:
            library.impl(qualified, _kernels.build_kernel(op), "PrivateUse1")

    names = [n[len("aten::") :] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")]
    for qualified in names:
        full = f"aten::{qualified}"
        if not torch._C._dispatch_has_kernel_for_dispatch_key(full, "CPU") and not (
            qualified.startswith(_LIST_OP_PREFIXES)
            and torch._C._dispatch_has_kernel_for_dispatch_key(full, "CompositeExplicitAutograd")
        ):
            continue
        try:
            op = _op_from_name(qualified)
        except (AttributeError, RuntimeError):
            continue
        add(qualified, op)
    for qualified in _kernels.DIRECT_COMPOSITES:
        if qualified not in done and not torch._C._dispatch_has_kernel_for_dispatch_key(
            f"aten::{qualified}", "PrivateUse1"
        ):
            add(qualified, _op_from_name(qualified))
    dispatch.register(switchable)

    # Anything else that reaches the device (ops with neither a CPU kernel nor a
    # composite one) gets a kernel built on first use.
    built: dict[torch._ops.OpOverload, Callable[..., Any]] = {}

    def fallback(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
        kernel = built.get(op)
        if kernel is None:
            kernel = built[op] = _kernels.build_kernel(op)
        return kernel(*args, **kwargs)

    libraries.make("fallback", "_").fallback(fallback, "PrivateUse1")


def has_compatible_shallow_copy_type(self: torch.Tensor, other: torch.Tensor) -> bool:
    """torch_npu's answer: dense host and device tensors can take each other's data in place.

    ``Module.to("npu")`` asks it before ``param.data = moved``; with PyTorch's default (same
    dispatch keys only) every move made new Parameter objects, so an optimizer built before the
    move kept stepping the old host parameters.
    """
    return (
        self.layout == torch.strided
        and other.layout == torch.strided
        and self.device.type in _DENSE_DEVICE_TYPES
        and other.device.type in _DENSE_DEVICE_TYPES
        and not (self.is_quantized or other.is_quantized)
    )


_DENSE_DEVICE_TYPES = ("cpu", DEVICE_TYPE)


def _register_shallow_copy_check() -> None:
    # Dispatched on the highest backend key of both arguments: PrivateUse1 when either is on
    # the npu, so CPU-only calls keep PyTorch's own kernel.
    library = libraries.make("shallow_copy")
    library.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type, "PrivateUse1")


def _register_host_pinning() -> None:
    # The Python path (no native part): with npu as the current accelerator,
    # DataLoader(pin_memory=True) and tensor.pin_memory() ask the PrivateUse1 hooks
    # for a pinned allocator, which a Python backend cannot provide. Host memory of the simulated device
    # is ordinary memory, so pinning for the npu is a copy and nothing is ever reported as
    # pinned. PyTorch reaches these ops through their CPU kernels, so that is where they are
    # replaced; a request that names another device still gets PyTorch's own kernel.
    library = libraries.make("host_pinning")
    cpu = DispatchKeySet(DispatchKey.CPU)
    torch_pin_memory = torch._C._dispatch_get_computed_kernel_for_dispatch_key(
        "aten::_pin_memory", DispatchKey.CPU
    )
    torch_is_pinned = torch._C._dispatch_get_computed_kernel_for_dispatch_key(
        "aten::is_pinned", DispatchKey.CPU
    )

    def pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
        if _for_npu(device):
            return self.clone()
        return torch_pin_memory.call_boxed(cpu, self, device)

    def is_pinned(self: torch.Tensor, device: Any = None) -> bool:
        if _for_npu(device):
            return False
        return torch_is_pinned.call_boxed(cpu, self, device)

    library.impl("_pin_memory", pin_memory, "CPU")
    library.impl("is_pinned", is_pinned, "CPU")


def _for_npu(device: Any) -> bool:
    """Whether a pinning request is for the npu: no device (the current accelerator) or an npu one."""
    return device is None or torch.device(device).type == DEVICE_TYPE
