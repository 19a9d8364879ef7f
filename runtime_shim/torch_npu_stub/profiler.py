"""``torch_npu.profiler`` on the simulated device: PyTorch's profiler, host activity only.

Ported scripts ask for ``ProfilerActivity.NPU``; on the simulated device every kernel runs on
the host, so NPU activity is recorded as CPU activity.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

import torch.profiler as _tp
from torch.profiler import ProfilerAction, record_function, schedule, tensorboard_trace_handler

from runtime_shim.not_simulated import module_getattr as _module_getattr

__all__ = [
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    CPU = "CPU"
    NPU = "NPU"


def supported_activities() -> set[ProfilerActivity]:
    return {ProfilerActivity.CPU, ProfilerActivity.NPU}


def _host_activities(activities: Iterable[Any] | None) -> list[_tp.ProfilerActivity] | None:
    if activities is None:
        return None
    return [_tp.ProfilerActivity.CPU] if list(activities) else []


class profile(_tp.profile):
    """torch.profiler.profile that accepts torch_npu's activities and its experimental_config."""

    def __init__(
        self,
        *args: Any,
        activities: Iterable[Any] | None = None,
        experimental_config: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, activities=_host_activities(activities), **kwargs)


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch_npu.profiler")
