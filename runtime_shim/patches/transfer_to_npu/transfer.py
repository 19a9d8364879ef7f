"""What ``torch_npu.contrib.transfer_to_npu`` patches, applied to the simulated NPU.

The list follows torch_npu's own module for torch 2.13 (Ascend/pytorch master): each group
below is one function, and runtime_shim/README.md lists every entry point with simulated or
not. Device arguments change only when they are a CUDA device (see ``device_args``).
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from runtime_shim.npu.typed_tensors import _TypedTensorMeta
from runtime_shim.patches.transfer_to_npu.device_args import map_args, map_backend, map_device, map_kwargs
from runtime_shim.patches.transfer_to_npu.patch_log import PatchLog, mapping_arguments

#: torch functions whose device arguments are mapped (torch_npu's list, as far as torch 2.13 has them).
TORCH_FUNCTIONS = (
    "logspace", "randint", "hann_window", "rand", "full_like", "ones_like", "rand_like", "randperm",
    "arange", "frombuffer", "normal", "_empty_per_channel_affine_quantized", "empty_strided",
    "empty_like", "scalar_tensor", "tril_indices", "bartlett_window", "ones", "sparse_coo_tensor",
    "randn", "kaiser_window", "tensor", "triu_indices", "as_tensor", "zeros", "randint_like", "full",
    "eye", "_sparse_csr_tensor_unsafe", "empty", "_sparse_coo_tensor_unsafe", "blackman_window",
    "zeros_like", "range", "sparse_csr_tensor", "randn_like", "from_file",
    "_cudnn_init_dropout_state", "_empty_affine_quantized", "linspace", "hamming_window",
    "empty_quantized", "_pin_memory", "load", "set_default_device",
    "get_device_module", "sparse_compressed_tensor",
)  # fmt: skip
TENSOR_METHODS = (
    "new_empty",
    "new_empty_strided",
    "new_full",
    "new_ones",
    "new_tensor",
    "new_zeros",
    "to",
    "pin_memory",
)
MODULE_METHODS = ("to", "to_empty")
#: torch.cuda functions (then torch.npu's) whose device arguments are mapped.
CUDA_FUNCTIONS = (
    "get_device_properties", "get_device_name", "get_device_capability", "list_gpu_processes", "set_device",
    "synchronize", "mem_get_info", "memory_stats", "memory_summary", "memory_allocated", "max_memory_allocated",
    "reset_max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_max_memory_cached",
    "reset_peak_memory_stats", "default_stream", "can_device_access_peer", "current_stream", "utilization",
    "set_per_process_memory_fraction", "caching_allocator_alloc",
)  # fmt: skip
JIT_WARNING = (
    "torch.jit.script and torch.jit.script_method will be disabled by transfer_to_npu, "
    "which currently does not support them. If you need to enable them, please do not use transfer_to_npu."
)


def _devices(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return map_args(args), map_kwargs(kwargs)


def _devices_and_ints(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    # Tensor.to(0) and Module.to(0) name a device by its index.
    return map_args(args, ints=True), map_kwargs(kwargs, ints=True)


def _devices_and_backend(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    args = tuple(map_backend(a) for a in map_args(args))
    kwargs = map_kwargs(kwargs)
    if "backend" in kwargs:
        kwargs["backend"] = map_backend(kwargs["backend"])
    return args, kwargs


devices = mapping_arguments(_devices)
devices_and_ints = mapping_arguments(_devices_and_ints)
devices_and_backend = mapping_arguments(_devices_and_backend)


def _wrap_all(log: PatchLog, owner: Any, names: tuple[str, ...], wrapper: Callable[..., Any]) -> None:
    for name in names:
        log.wrap(owner, name, wrapper)


class _GeneratorMeta(type(torch.Generator)):  # type: ignore[misc]  # a base computed at run time
    # isinstance(torch.Generator(), torch.Generator) stays true for generators torch makes itself.
    def __instancecheck__(cls, instance: Any) -> bool:
        return super().__instancecheck__(instance) or isinstance(instance, cls.__mro__[1])


class GeneratorProxy(torch.Generator, metaclass=_GeneratorMeta):
    """``torch.Generator`` under transfer_to_npu: a CUDA device argument means the npu."""

    def __new__(cls, device: Any = "cpu") -> Any:
        return super().__new__(cls, map_device(device))  # type: ignore[call-arg]  # its stubs take no device


class EventProxy(torch.Event, metaclass=_GeneratorMeta):
    """``torch.Event`` under transfer_to_npu: a CUDA device argument means the npu."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = _devices(args, kwargs)
        return super().__new__(cls, *args, **kwargs)


class _DoubleAsFloatMeta(_TypedTensorMeta):
    def __call__(cls, *args: Any, **kwargs: Any) -> torch.Tensor:
        # The converted copy makes float64 tensors here (torch.npu.DoubleTensor): say so at the line.
        warnings.warn(
            "transfer_to_npu: torch.cuda.DoubleTensor makes float32 tensors (torch.npu.FloatTensor), as torch_npu does",
            RuntimeWarning,
            stacklevel=2,
        )
        return super().__call__(*args, **kwargs)


#: ``torch.cuda.DoubleTensor``: torch_npu's transfer_to_npu hands out ``torch.npu.FloatTensor``.
DoubleTensorAsFloat = _DoubleAsFloatMeta(
    "FloatTensor", (), {"dtype": torch.float32, "is_npu": True, "__module__": "torch.npu"}
)


def patch_torch_cuda(log: PatchLog) -> None:
    """``torch.cuda.*`` answered by ``torch.npu``: every torch_npu name, amp, random, the device knobs."""
    npu = torch.npu  # type: ignore[attr-defined]  # set by activate(), not in torch's stubs
    for name in npu.__all__:
        log.set(torch.cuda, name, getattr(npu, name))
    for name in npu.amp.__all__:
        log.set(torch.cuda.amp, name, getattr(npu.amp, name))
    for name in torch.cuda.random.__all__:
        if hasattr(npu, name):
            log.set(torch.cuda.random, name, getattr(npu, name))
    _wrap_all(log, torch.cuda, CUDA_FUNCTIONS, devices)
    log.wrap(torch.cuda.device, "__init__", devices)
    if hasattr(npu, "default_generators"):
        log.set(torch.cuda, "default_generators", npu.default_generators)
    log.set(torch.cuda, "DoubleTensor", DoubleTensorAsFloat)
    log.set(torch.cuda, "CUDAGraph", npu.NPUGraph)
    for name in ("_record_memory_history", "_snapshot", "_dump_snapshot"):
        log.set(
            torch.cuda.memory, name, getattr(npu.memory, name, _not_simulated(f"torch.cuda.memory.{name}"))
        )


def _not_simulated(qualname: str) -> Callable[..., Any]:
    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{qualname} under transfer_to_npu is not simulated by runtime_shim")

    return unavailable


def patch_torch(log: PatchLog) -> None:
    """Factories, ``torch.load``'s map_location, Generator/Event, autocast, storages, fft."""
    from torch.utils._device import DeviceContext, _device_constructors

    # Its cached set must hold torch's own functions (the ones __torch_function__ is handed),
    # not the wrappers installed below.
    _device_constructors()
    _wrap_all(log, torch, TORCH_FUNCTIONS, devices)
    log.wrap(torch.UntypedStorage, "__new__", devices)
    log.set(torch, "Generator", GeneratorProxy)
    log.set(torch, "Event", EventProxy)
    log.wrap(torch.amp.autocast_mode.autocast, "__init__", devices)
    _wrap_all(log, torch.fft, ("fftfreq", "rfftfreq"), devices)
    log.wrap(DeviceContext, "__init__", devices)


def patch_tensor_and_module(log: PatchLog) -> None:
    """``Tensor.cuda`` / ``is_cuda`` / ``to`` / ``new_*``, ``Module.cuda`` / ``to`` / ``to_empty``."""
    for name in TENSOR_METHODS:
        log.wrap(torch.Tensor, name, devices_and_ints if name == "to" else devices)
    log.set(torch.Tensor, "cuda", torch.Tensor.npu)  # type: ignore[attr-defined]  # set by activate()
    log.set(torch.Tensor, "is_cuda", torch.Tensor.is_npu)  # type: ignore[attr-defined]  # set by activate()
    _wrap_all(log, torch.nn.Module, MODULE_METHODS, devices_and_ints)
    log.set(torch.nn.Module, "cuda", torch.nn.Module.npu)  # type: ignore[attr-defined]  # set by activate()
    # torch_npu also lists its Tensor.to wrapper among an UninitializedParameter's allowed
    # methods; moving a lazy module before its first forward fails on the simulated npu
    # without transfer_to_npu too, so that one is left out (README).


def patch_distributed(log: PatchLog) -> None:
    """nccl as hccl, cuda devices as npu in init_process_group, groups, DDP, FSDP, device meshes."""
    import torch.distributed as dist

    if not dist.is_available():  # pragma: no cover - depends on the torch build
        return
    log.wrap(dist, "init_process_group", devices_and_backend)
    log.set(dist, "is_nccl_available", dist.is_hccl_available)  # type: ignore[attr-defined]  # set by activate()
    log.wrap(dist.ProcessGroup, "_get_backend", devices)
    log.wrap(dist.distributed_c10d, "_new_group_with_tag", devices_and_backend)
    log.wrap(torch.nn.parallel.DistributedDataParallel, "__init__", devices)
    from torch.distributed import device_mesh, fsdp

    log.wrap(fsdp.FullyShardedDataParallel, "__init__", devices)
    backend_map = dist.Backend.default_device_backend_map
    if "cuda" in backend_map:
        # A default group then has no nccl part: "cuda" tensors are npu tensors.
        log.set(
            dist.Backend, "default_device_backend_map", {k: v for k, v in backend_map.items() if k != "cuda"}
        )
    log.wrap(device_mesh, "init_device_mesh", devices)
    log.set(dist, "init_device_mesh", device_mesh.init_device_mesh)
    log.wrap(device_mesh.DeviceMesh, "__init__", devices)
    if "torch.distributed.pipelining" in sys.modules or hasattr(dist, "pipelining"):
        stage = sys.modules["torch.distributed.pipelining.stage"]
        log.wrap(stage.PipelineStage, "__init__", devices)
        log.wrap(stage, "build_stage", devices)


_scripted_sites: set[tuple[str, int]] = set()


def _script(obj: Any, *args: Any, **kwargs: Any) -> Any:
    # Where the converted copy scripts the function and this run does not, say so at the line.
    caller = sys._getframe(1)
    site = (caller.f_code.co_filename, caller.f_lineno)
    if site not in _scripted_sites:
        _scripted_sites.add(site)
        name = getattr(obj, "__qualname__", type(obj).__name__)
        warnings.warn(
            f"transfer_to_npu: torch.jit.script({name}) returns it unscripted", RuntimeWarning, stacklevel=2
        )
    return obj


def _script_method(fn: Any) -> Any:
    return fn


def patch_jit_and_compile(log: PatchLog) -> None:
    """``torch.jit.script`` returns its argument (as torch_npu does), triton is reported absent."""
    warnings.warn(JIT_WARNING, RuntimeWarning, stacklevel=3)
    log.set(torch.jit, "script", functools.wraps(torch.jit.script)(_script))
    log.set(torch.jit, "script_method", _script_method)
    from torch.utils import _triton

    log.set(_triton, "has_triton", lambda: False)
    log.set(torch._utils, "_get_available_device_type", lambda: "npu" if torch.npu.is_available() else None)  # type: ignore[attr-defined]  # torch.npu: set by activate()


def patch_profiler_and_tools(log: PatchLog, npu_profiler: ModuleType) -> None:
    """torch.profiler as torch_npu.profiler (CUDA activity = NPU), cpp_extension and Kernel devices."""
    log.set(torch.profiler, "profile", _dropping_cuda_experimental_config(npu_profiler.profile))
    log.set(torch.profiler, "schedule", npu_profiler.schedule)
    log.set(torch.profiler, "tensorboard_trace_handler", npu_profiler.tensorboard_trace_handler)
    log.set(torch.profiler, "ProfilerAction", npu_profiler.ProfilerAction)
    # The enum stays torch's (torch.autograd's profiler uses it too); its CUDA member means NPU.
    # torch_npu swaps CPU for its own member too; the simulated profile takes torch's.
    log.set(torch.profiler.ProfilerActivity, "CUDA", npu_profiler.ProfilerActivity.NPU)
    from torch.autograd.profiler_util import Kernel
    from torch.utils import cpp_extension

    log.wrap(cpp_extension, "include_paths", devices)
    log.wrap(Kernel, "__new__", devices)


def _dropping_cuda_experimental_config(profile: Any) -> Any:
    """torch_npu drops an experimental_config that is not its own, with a warning."""

    class profile_(profile):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            config = kwargs.get("experimental_config")
            if config is not None and type(config).__module__.startswith("torch."):
                warnings.warn(
                    "The parameter experimental_config of torch.profiler.profile has been removed by "
                    "transfer_to_npu because it can only be used with CUDA",
                    stacklevel=2,
                )
                del kwargs["experimental_config"]
            super().__init__(*args, **kwargs)

    profile_.__name__ = profile_.__qualname__ = "profile"
    return profile_


GROUPS = (
    patch_torch_cuda,
    patch_torch,
    patch_tensor_and_module,
    patch_distributed,
    patch_jit_and_compile,
)


def install(npu_profiler: ModuleType) -> PatchLog:
    """Apply every patch group, torch.profiler's from ``npu_profiler`` (torch_npu.profiler); the
    returned log can undo them (tests do). The simulated npu is active: torch_npu's stand-in,
    which activated it, is the caller."""
    log = PatchLog()
    try:
        for group in GROUPS:
            group(log)
        patch_profiler_and_tools(log, npu_profiler)
    except BaseException:
        log.restore()
        raise
    return log
