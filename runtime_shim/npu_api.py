"""``torch.npu`` (= ``torch_npu.npu``) for the simulated device.

Names in torch_npu's ``__all__`` that are simulated are defined here; every
other name of that list resolves to a callable that raises
``NotImplementedError("torch.npu.X is not simulated by runtime_shim")`` when
used, so a converted script never silently skips device work.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import torch

from runtime_shim._compat import data_file
from runtime_shim.device import DEVICE_TYPE, STATE
from runtime_shim.memory import DeviceMemory, MemoryTracker

# Lets `import torch_npu.npu.amp` / `torch.npu.amp` resolve below this module.
__path__: list[str] = []

# ----------------------------------------------------------------------------- devices


def is_available() -> bool:
    """The simulated device is always available once runtime_shim is active."""
    return True


def is_initialized() -> bool:
    """True: the simulated device needs no lazy initialisation."""
    return STATE.installed


def init() -> None:
    """Accepted for compatibility: initialisation happens at activation."""


def _lazy_init() -> None:
    """Hook some libraries call on device modules; nothing to do here."""


def _is_in_bad_fork() -> bool:
    # The simulated device has no driver state a fork could corrupt.
    return False


def device_count() -> int:
    """Number of simulated devices (RUNTIME_SHIM_DEVICE_COUNT, default 8)."""
    return STATE.device_count


def _index(device: Any = None, *, optional: bool = True) -> int:
    if device is None:
        return STATE.current
    if isinstance(device, int):
        index = device
    else:
        device = torch.device(device)
        if device.type != DEVICE_TYPE:
            raise ValueError(f"Expected a {DEVICE_TYPE} device, but got: {device}")
        index = STATE.current if device.index is None else device.index
    if not 0 <= index < STATE.device_count:
        raise RuntimeError(
            f"Invalid device id {index}: the simulated NPU has {STATE.device_count} devices "
            "(set RUNTIME_SHIM_DEVICE_COUNT to change)"
        )
    return index


def current_device() -> int:
    """Index of the current npu device."""
    return STATE.current


def set_device(device: Any) -> None:
    """Make ``device`` (index, "npu:N" or torch.device) the current npu device."""
    STATE.current = _index(device)


class device:
    """Context manager that changes the current npu device."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = STATE.current
        if self.idx >= 0:
            STATE.current = self.idx
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.current = self.prev_idx


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current."""

    def __init__(self, obj: Any) -> None:
        idx = obj.get_device() if obj.device.type == DEVICE_TYPE else -1
        super().__init__(idx if idx >= 0 else None)


def synchronize(device: Any = None) -> None:
    """Wait for all work on the device: the simulated device is synchronous."""
    _index(device)


def can_device_access_peer(device: Any, peer_device: Any) -> bool:
    """All simulated devices share host memory, so peers are always reachable."""
    _index(device)
    _index(peer_device)
    return True


@dataclass(frozen=True)
class _NPUDeviceProperties:
    name: str
    total_memory: int
    cube_core_num: int = 24
    vector_core_num: int = 48
    L2_cache_size: int = 192 * 1024 * 1024

    def __repr__(self) -> str:
        return (
            f"_NPUDeviceProperties(name='{self.name}', total_memory={self.total_memory // 1024**2}MB, "
            f"cube_core_num={self.cube_core_num}, vector_core_num={self.vector_core_num}, "
            f"L2_cache_size={self.L2_cache_size // 1024**2}MB)"
        )


def get_device_name(device: Any = None) -> str:
    """Name of the simulated device (RUNTIME_SHIM_DEVICE_NAME overrides it)."""
    _index(device)
    return os.environ.get("RUNTIME_SHIM_DEVICE_NAME", "Ascend910B2 (simulated by runtime_shim)")


def get_device_properties(device: Any = None) -> _NPUDeviceProperties:
    """Properties of the simulated device; total_memory is the configured capacity."""
    index = _index(device)
    return _NPUDeviceProperties(get_device_name(index), _memory(index).capacity)


def get_device_capability(device: Any = None) -> None:
    """torch_npu reports no CUDA-style capability; neither does the simulation."""
    _index(device)
    return None


# ----------------------------------------------------------------------------- memory


def _tracker() -> MemoryTracker:
    assert STATE.tracker is not None, "the simulated device is installed before torch.npu is used"
    return STATE.tracker


def _memory(device: Any = None) -> DeviceMemory:
    return _tracker().devices[_index(device)]


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live npu storages on the device."""
    return _memory(device).allocated


def max_memory_allocated(device: Any = None) -> int:
    """Peak of memory_allocated since start or the last peak reset."""
    return _memory(device).peak_allocated


def memory_reserved(device: Any = None) -> int:
    """Bytes reserved by the simulated caching allocator (freed bytes stay until empty_cache)."""
    return _memory(device).reserved


def max_memory_reserved(device: Any = None) -> int:
    """Peak of memory_reserved."""
    return _memory(device).peak_reserved


def memory_cached(device: Any = None) -> int:
    """Deprecated alias of memory_reserved."""
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    """Deprecated alias of max_memory_reserved."""
    return max_memory_reserved(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart the peak counters."""
    _memory(device).reset_peak()


def reset_max_memory_allocated(device: Any = None) -> None:
    """Restart the peak counters (torch_npu resets both)."""
    _memory(device).reset_peak()


def reset_max_memory_cached(device: Any = None) -> None:
    """Restart the peak counters (torch_npu resets both)."""
    _memory(device).reset_peak()


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Reset the allocation/free counts."""
    mem = _memory(device)
    mem.num_allocs = mem.num_frees = 0


def empty_cache() -> None:
    """Release cached blocks: reserved memory drops to allocated memory."""
    for mem in _tracker().devices:
        mem.empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device, from the simulated capacity."""
    mem = _memory(device)
    return mem.capacity - mem.reserved, mem.capacity


def memory_stats(device: Any = None) -> dict[str, int]:
    """A flat dict with the main keys of torch.cuda.memory_stats()."""
    return _memory(device).stats()


def memory_stats_as_nested_dict(device: Any = None) -> dict:
    """memory_stats() nested on its dots, as torch.cuda does."""
    nested: dict = {}
    for key, value in memory_stats(device).items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return nested


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A short human-readable memory report."""
    mem = _memory(device)
    return (
        f"runtime_shim simulated NPU {mem.index}: allocated {mem.allocated} B "
        f"(peak {mem.peak_allocated} B), reserved {mem.reserved} B (peak {mem.peak_reserved} B), "
        f"capacity {mem.capacity} B"
    )


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Cap the device at ``fraction`` of its configured capacity."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    mem = _memory(device)
    mem.fraction_base = getattr(mem, "fraction_base", mem.capacity)
    mem.capacity = int(mem.fraction_base * fraction)


def get_per_process_memory_fraction(device: Any = None) -> float:
    """The fraction set by set_per_process_memory_fraction (1.0 by default)."""
    mem = _memory(device)
    return mem.capacity / getattr(mem, "fraction_base", mem.capacity)


# ----------------------------------------------------------------------------- streams


class Stream:
    """A stream of the simulated device. Work runs synchronously on the host,
    so every stream is always complete and ordering between streams holds."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = torch.device(DEVICE_TYPE, _index(device))
        self.priority = priority
        self.npu_stream = id(self)

    def query(self) -> bool:
        """Always True: all queued work has already run."""
        return True

    def synchronize(self) -> None:
        """Nothing is pending on a synchronous stream."""

    def wait_stream(self, stream: Stream) -> None:
        """Ordering is already guaranteed by synchronous execution."""

    def wait_event(self, event: Event) -> None:
        """Ordering is already guaranteed by synchronous execution."""

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (or a new one) on this stream."""
        event = event or Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.npu_stream == self.npu_stream

    def __hash__(self) -> int:
        return hash(self.npu_stream)

    def __repr__(self) -> str:
        return f"<torch_npu.npu.Stream device={self.device} npu_stream={self.npu_stream:#x}>"


_streams = threading.local()
_default_streams: dict[int, Stream] = {}


def default_stream(device: Any = None) -> Stream:
    """The default stream of the device."""
    index = _index(device)
    stream_obj = _default_streams.get(index)
    if stream_obj is None:
        stream_obj = _default_streams[index] = Stream(index)
    return stream_obj


def current_stream(device: Any = None) -> Stream:
    """The stream selected by ``torch.npu.stream``/``set_stream``, else the default one."""
    index = _index(device)
    selected = getattr(_streams, "by_device", {}).get(index)
    return selected or default_stream(index)


def set_stream(stream: Stream | None) -> None:
    """Select ``stream`` as current for its device."""
    if stream is None:
        return
    if not hasattr(_streams, "by_device"):
        _streams.by_device = {}
    _streams.by_device[stream.device.index] = stream


class StreamContext:
    """Context manager selecting a stream (and its device)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self._saved: tuple | None = None

    def __enter__(self):
        if self.stream is None:
            return self
        index = self.stream.device.index
        self._saved = (STATE.current, index, getattr(_streams, "by_device", {}).get(index))
        STATE.current = index
        set_stream(self.stream)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            current, index, previous = self._saved
            _streams.by_device[index] = previous
            STATE.current = current


def stream(stream: Stream | None) -> StreamContext:
    """``with torch.npu.stream(s):`` selects ``s`` for the block."""
    return StreamContext(stream)


class Event:
    """An event of the simulated device: records host time when recorded."""

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the point in the stream (work before it has already run)."""
        self._time = time.perf_counter()

    def wait(self, stream: Stream | None = None) -> None:
        """Ordering is already guaranteed by synchronous execution."""

    def query(self) -> bool:
        """True once recorded work is complete, which is immediately."""
        return True

    def synchronize(self) -> None:
        """Nothing is pending."""

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event's and ``end_event``'s record calls."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


# ----------------------------------------------------------------------------- random
# The simulated device draws random numbers from the host default generator:
# that is what makes a converted script bit-identical to the original run on
# CPU. Seeding the npu therefore seeds that generator; scripts seed torch and
# the device with the same value, which leaves the stream unchanged.


def manual_seed(seed: int) -> None:
    """Seed the generator used for npu random ops (the host default generator)."""
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed the generator of all npu devices (they share the host generator)."""
    manual_seed(seed)


def seed() -> None:
    """Seed the npu generator with a non-deterministic number."""
    torch.default_generator.seed()


def seed_all() -> None:
    """Same as seed(): all devices share one generator."""
    seed()


def initial_seed() -> int:
    """The seed of the npu generator."""
    return torch.default_generator.initial_seed()


def get_rng_state(device: Any = "npu") -> torch.Tensor:
    """State of the npu generator (a CPU ByteTensor, as torch_npu returns)."""
    return torch.default_generator.get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "npu") -> None:
    """Restore a state returned by get_rng_state."""
    torch.default_generator.set_state(new_state.cpu())


def get_rng_state_all() -> list[torch.Tensor]:
    """One state per device."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    """Restore states from get_rng_state_all (devices share one generator)."""
    for state in new_states:
        set_rng_state(state)


# ----------------------------------------------------------------------------- options


_options: dict[str, Any] = {}


def set_option(option: dict) -> None:
    """Accepted and recorded: no option changes host computation."""
    if not isinstance(option, dict):
        raise TypeError("npu option must be a dict.")
    _options.update(option)


def set_compile_mode(jit_compile: bool = False) -> None:
    """Accepted and recorded (operator compilation does not exist on the host)."""
    _options["jit_compile"] = bool(jit_compile)


def is_jit_compile_false() -> bool:
    """Whether set_compile_mode(jit_compile=False) is in effect (the default)."""
    return not _options.get("jit_compile", False)


def get_sync_debug_mode() -> int:
    """The recorded sync debug mode (0 by default)."""
    return _options.get("sync_debug_mode", 0)


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """Record the sync debug mode (the simulated device never syncs implicitly)."""
    modes = {"default": 0, "warn": 1, "error": 2}
    _options["sync_debug_mode"] = (
        modes.get(debug_mode, debug_mode) if isinstance(debug_mode, str) else debug_mode
    )


class _HF32Flags:
    """Holder for ``torch.npu.matmul.allow_hf32`` / ``torch.npu.conv.allow_hf32``.

    The flags are stored and read back; host kernels always compute in IEEE fp32.
    """

    def __init__(self, allow_hf32: bool) -> None:
        self.allow_hf32 = allow_hf32


matmul = _HF32Flags(False)
conv = _HF32Flags(True)


# ----------------------------------------------------------------------------- amp flags


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Low-precision dtypes autocast accepts on the device."""
    return [torch.float16, torch.bfloat16]


def is_bf16_supported() -> bool:
    """The host kernels support bfloat16."""
    return True


def is_autocast_enabled() -> bool:
    """Whether npu autocast is on."""
    return torch.is_autocast_enabled(DEVICE_TYPE)


def set_autocast_enabled(enabled: bool) -> None:
    """Turn npu autocast on or off."""
    torch.set_autocast_enabled(DEVICE_TYPE, enabled)


def get_autocast_dtype() -> torch.dtype:
    """The npu autocast dtype."""
    return torch.get_autocast_dtype(DEVICE_TYPE)


def set_autocast_dtype(dtype: torch.dtype) -> None:
    """Set the npu autocast dtype."""
    torch.set_autocast_dtype(DEVICE_TYPE, dtype)


# ----------------------------------------------------------------------------- typed tensors


class _TypedTensorMeta(type):
    dtype: torch.dtype  # set by each typed-tensor class

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, torch.Tensor) and obj.device.type == DEVICE_TYPE and obj.dtype == cls.dtype

    def __call__(cls, *args: Any, **kwargs: Any) -> torch.Tensor:
        device_obj = torch.device(DEVICE_TYPE, STATE.current)
        if len(args) == 1 and not isinstance(args[0], int) and not isinstance(args[0], torch.Size):
            return torch.as_tensor(args[0], dtype=cls.dtype).to(device_obj)
        return torch.empty(*args, dtype=cls.dtype, device=device_obj, **kwargs)


def _typed(name: str, dtype: torch.dtype) -> type:
    return _TypedTensorMeta(name, (), {"dtype": dtype, "is_npu": True, "__module__": "torch.npu"})


FloatTensor = _typed("FloatTensor", torch.float32)
DoubleTensor = _typed("DoubleTensor", torch.float64)
HalfTensor = _typed("HalfTensor", torch.float16)
BFloat16Tensor = _typed("BFloat16Tensor", torch.bfloat16)
ByteTensor = _typed("ByteTensor", torch.uint8)
CharTensor = _typed("CharTensor", torch.int8)
ShortTensor = _typed("ShortTensor", torch.int16)
IntTensor = _typed("IntTensor", torch.int32)
LongTensor = _typed("LongTensor", torch.int64)
BoolTensor = _typed("BoolTensor", torch.bool)


# ----------------------------------------------------------------------------- the rest


def _load_all_names() -> list[str]:
    data = json.loads(data_file("npu_api_names.json").read_text(encoding="utf-8"))
    names: set[str] = set()
    for release_names in data["releases"].values():
        names.update(release_names)
    return sorted(names)


def _not_simulated(name: str):
    message = f"torch.npu.{name} is not simulated by runtime_shim"

    def unavailable(*args: Any, **kwargs: Any):
        raise NotImplementedError(message)

    unavailable.__name__ = name
    unavailable.__qualname__ = name
    unavailable.__doc__ = message
    return unavailable


__all__ = _load_all_names()
NOT_SIMULATED = sorted(name for name in __all__ if name not in globals())
for _name in NOT_SIMULATED:
    globals()[_name] = _not_simulated(_name)
del _name

from runtime_shim import amp  # noqa: E402,F401  (needs the names above; exposes torch.npu.amp)
