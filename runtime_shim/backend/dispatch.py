"""Which path serves the npu's ATen ops: the native kernels (csrc/npu_dispatch.cpp) or the Python ones.

With the native part loaded, the ops a native kernel can serve are those whose npu arguments
only need to be handed to the CPU kernel as CPU tensors over the same bytes and whose results
are fresh tensors or alias an argument: everything kernels.py's generic and view kernels do,
plus ``copy_``, the ``empty`` factories (capacity checked before the host allocation) and the
convolutions (``convolution_overrideable`` and its backward, computed as the CPU's
``convolution`` / ``convolution_backward`` by unboxed kernels, csrc/npu_typed.cpp). The other
special kernels (``resize_``, ``set_``, out= variants, flash attention) stay in Python. The
recurrent layers (rnn.py) and the SDPA and dropout routes (attention.py) have their own C++ on
the native path (csrc/npu_rnn.cpp, csrc/npu_attention.cpp), registered as groups of routes
(csrc/npu_routes.cpp).
``RUNTIME_SHIM_NATIVE_DISPATCH=0`` keeps every op on the Python kernels; ``set_dispatch``
switches at run time (bench/bench_ops.py measures both paths in one process).

Both paths count calls for the operator check: a native kernel sends each call of an op through
the check's Python hook until the check has seen it, then counts in C++; ``flush_counts`` adds
those counts to ``STATE.op_counts`` and ``rearm`` makes every op go through the hook again. An op
whose every call the check looks at (its dtype check) goes through the hook only for the dtypes
the check names (its ``calls_to_see``: float64 and complex in its default mode).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection
from typing import Any

import torch

from runtime_shim.backend import kernels as _kernels
from runtime_shim.backend import libraries
from runtime_shim.runtime.state import STATE

ENV = "RUNTIME_SHIM_NATIVE_DISPATCH"

# Ops some other part of the runtime registers its own npu kernel for.
_OWN_KERNELS = {
    "_has_compatible_shallow_copy_type",
    "lstm.input",
    "gru.input",
    "lstm_cell",
    "gru_cell",
    "rnn_tanh.input",
    "rnn_relu.input",
}
# Special kernels of kernels.py that a native kernel does the same as. (empty.memory_format: the
# native kernel checks capacity before allocating, as _k_empty does; the convolutions: unboxed
# kernels run the CPU's convolution ops, as _k_convolution and _k_convolution_backward do.)
_NATIVE_SPECIALS = {
    "copy_",
    "empty.memory_format",
    "empty_strided",
    "convolution_overrideable",
    "convolution_backward_overrideable",
}


class _Switch:
    def __init__(self) -> None:
        #: (qualified name, op) of every op either path can serve
        self.ops: list[tuple[str, torch._ops.OpOverload]] = []
        self.python: dict[str, Callable[..., Any]] = {}
        self.native = False
        self.registered = False
        #: (release name, op) of every composite op given an NPU-level kernel
        self.levels: list[tuple[str, torch._ops.OpOverload]] = []
        #: route groups whose Python kernels are installed: the native path serves them in C++ too
        self.routes: list[str] = []


_SWITCH = _Switch()


def requested() -> bool:
    """Whether the environment asks for the native path (the default when it is built)."""
    return os.environ.get(ENV, "1").strip() != "0"


def available() -> bool:
    """Whether this process has native kernels to switch to."""
    return STATE.native is not None


def native_enabled() -> bool:
    """Whether the native kernels serve the ops they can serve right now."""
    return _SWITCH.native


def eligible(op: torch._ops.OpOverload) -> bool:
    """Whether a native kernel can serve ``op`` exactly as its Python kernel does."""
    spec = _kernels._Spec(op)
    if spec.qualified in _OWN_KERNELS or spec.base in _OWN_KERNELS:
        return False
    special = spec.qualified in _kernels._SPECIAL or spec.base in _kernels._SPECIAL
    if special and spec.qualified not in _NATIVE_SPECIALS:
        return False
    if spec.written_kw:
        return False  # out= variants: the Python path handles resizing the outs
    return all(
        kind != "alias" or (source is not None and source[0] == "pos") for kind, source in spec.returns
    )


def _native_args(op: torch._ops.OpOverload) -> tuple[str, str, bool, bool, list[int], list[int]]:
    spec = _kernels._Spec(op)
    schema = op._schema
    kinds = []
    for arg in schema.arguments:
        kind = str(arg.type)
        if kind in _kernels._TENSOR_TYPES:
            kinds.append(1)
        elif kind in _kernels._LIST_TYPES:
            kinds.append(2)
        elif kind in _kernels._DEVICE_TYPES:
            kinds.append(3)
        else:
            kinds.append(0)
    aliases = [source[1] if kind == "alias" and source is not None else -1 for kind, source in spec.returns]
    view = spec.base in _kernels._METADATA_INPLACE or (spec.is_view and not spec.mutable)
    return spec.qualified, spec.qualified, view, spec.mixed_ok, kinds, aliases


def register(ops: list[tuple[str, torch._ops.OpOverload]]) -> None:
    """Serve ``ops`` (eligible ones) by the path the environment asks for (install() calls it once)."""
    _SWITCH.ops = list(ops)
    if STATE.native is not None:
        STATE.native.set_call_hook(_call_hook)
        STATE.native.set_count_hook(_add_counts)
    set_dispatch(requested() and available())


def set_dispatch(native: bool) -> None:
    """Serve the switchable ops by the native kernels (True) or the Python ones (False)."""
    if native and not available():
        raise RuntimeError(
            "runtime_shim: no native dispatch path in this process (the native part is not loaded)"
        )
    if _SWITCH.registered and native == _SWITCH.native:
        return
    libraries.drop("npu_level")
    if native:
        libraries.drop("switchable")
        for name, op in _SWITCH.ops:
            STATE.native.add_op(*_native_args(op), _kernels._counter(name))
    else:
        if STATE.native is not None:
            STATE.native.drop_ops()
        library = libraries.make("switchable")
        for name, op in _SWITCH.ops:
            kernel = _SWITCH.python.get(name)
            if kernel is None:
                kernel = _SWITCH.python[name] = _kernels.build_kernel(op)
            library.impl(name, kernel, "PrivateUse1")
    _SWITCH.native = native
    _kernels.NATIVE_LEVELS[0] = native
    _SWITCH.registered = True
    for name, op in _SWITCH.levels:
        _register_npu_level(name, op)
    if native:
        for group in _SWITCH.routes:
            _add_native_routes(group)


#: what each group of routes counts its calls as (csrc/npu_attention.cpp, csrc/npu_rnn.cpp)
ROUTE_COUNTS = {
    "attention": ("scaled_dot_product_attention", "native_dropout"),
    "rnn": ("lstm.input", "gru.input", "lstm_cell", "_thnn_fused_gru_cell"),
}


def serve_routes(group: str) -> None:
    """A module has registered its Python routes (``group``: attention.py's "attention", rnn.py's
    "rnn"): serve them in C++ while the native path serves (registered after the Python ones, so
    they take over; dropped with the native kernels)."""
    if group not in _SWITCH.routes:
        _SWITCH.routes.append(group)
    if _SWITCH.native:
        _add_native_routes(group)


def _add_native_routes(group: str) -> None:
    STATE.native.add_routes(group, {name: _kernels._counter(name) for name in ROUTE_COUNTS[group]})


def add_npu_level_op(name: str, op: torch._ops.OpOverload) -> None:
    """Serve composite ``op`` (``name`` in the support data) as an op torch_npu dispatches itself.

    Its kernel at the npu's autograd key counts it as ``name`` and runs its C++ decomposition
    (CompositeImplicitAutograd, what the CPU runs) one NPU level deeper: in C++ on the native
    path, through ``kernels.npu_level`` on the Python one.
    """
    _SWITCH.levels.append((name, op))
    _register_npu_level(name, op)


def remove_npu_level_ops(names: Collection[str]) -> None:
    """Serve ``names`` by PyTorch's own kernels again (undo ``add_npu_level_op``)."""
    kept = [(name, op) for name, op in _SWITCH.levels if name not in names]
    if len(kept) == len(_SWITCH.levels):
        return
    _SWITCH.levels = kept
    if STATE.native is not None:
        STATE.native.drop_npu_level_ops()
    libraries.drop("npu_level")
    for name, op in kept:
        _register_npu_level(name, op)


def _register_npu_level(name: str, op: torch._ops.OpOverload) -> None:
    if _SWITCH.native:
        qualified, _, _, _, kinds, _ = _native_args(op)
        STATE.native.add_npu_level_op(qualified, name, kinds, _kernels._counter(name))
        return
    library = libraries.get("npu_level") or libraries.make("npu_level")
    # Not op.decompose: for an op with a Python decomposition (matmul, one_hot) that runs the
    # Python one, slower and not bound to issue the ops the C++ kernel issues.
    decomposition = functools.partial(op._op_dk, torch._C.DispatchKey.CompositeImplicitAutograd)
    library.impl(name, _kernels.npu_level(name, decomposition), "AutogradPrivateUse1")


def _call_hook(counter: list[int], name: str, args: tuple[Any, ...]) -> bool | list[Any]:
    """A native kernel's call while its op is armed: count it and run the first-call check.

    Returns True when the op may count in C++ from now on (the check did not ask to see the next
    call), else the dtypes whose calls the check still has to see, or False for every call. Never
    called inside an NPU-level kernel: the native kernels neither count nor check the calls made
    there.
    """
    counter[0] += 1
    if counter[0] == 1:
        _kernels._first_call(name, args)
    if counter[0] > 0:
        return True
    calls_to_see = getattr(_checker(), "calls_to_see", None)
    watched = calls_to_see(name) if calls_to_see is not None else None
    return False if watched is None else watched


def _checker() -> Any:
    """The operator check whose first-call hook is installed (STATE.on_first_call's owner), if any."""
    return getattr(STATE.on_first_call, "__self__", None)


def _add_counts(counter: list[int], name: str, calls: int, watching: bool) -> None:
    """File ``calls`` calls a native kernel counted: in the op's count, or, for an op whose calls
    the check looks at one by one, with the calls the check counted (where the Python path's
    hook would have put them)."""
    add_checked_calls = getattr(_checker(), "add_checked_calls", None)
    if watching and add_checked_calls is not None:
        add_checked_calls(name, calls)
    else:
        counter[0] += calls


def flush_counts() -> None:
    """Add the calls the native kernels counted to ``STATE.op_counts``."""
    if STATE.native is not None:
        STATE.native.flush_counts()


def rearm() -> None:
    """Send the next call of every native op through the operator check's hook again."""
    if STATE.native is not None:
        STATE.native.flush_counts()
        STATE.native.rearm()
