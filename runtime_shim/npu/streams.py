"""torch.npu streams and events: the simulated device is synchronous, so both only keep order and time."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

import torch

from runtime_shim.not_simulated import module_getattr as _module_getattr
from runtime_shim.npu.devices import _check_range, _index_or_current, _resolve
from runtime_shim.runtime.state import DEVICE_TYPE, STATE


class Stream:
    """A stream of the simulated device. Work runs synchronously on the host,
    so every stream is always complete and ordering between streams holds."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        # None or a negative index: the current device, as torch.cuda.Stream takes it
        index = _resolve(device)
        self.device = torch.device(DEVICE_TYPE, STATE.current if index < 0 else _check_range(index))
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
    """The default stream of the device (-1: the current device's)."""
    index = _index_or_current(device)
    stream_obj = _default_streams.get(index)
    if stream_obj is None:
        stream_obj = _default_streams[index] = Stream(index)
    return stream_obj


def current_stream(device: Any = None) -> Stream:
    """The stream selected by ``torch.npu.stream``/``set_stream``, else the default one (-1: current device)."""
    index = _index_or_current(device)
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
        self._saved: tuple[int, int, Stream | None] | None = None

    def __enter__(self) -> StreamContext:
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


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu.streams")
