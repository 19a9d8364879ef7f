"""torch.npu.FloatTensor and friends: constructors and isinstance checks for npu tensors of one dtype."""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

import torch

from runtime_shim.not_simulated import module_getattr as _module_getattr
from runtime_shim.runtime.state import DEVICE_TYPE, STATE


class _TypedTensorMeta(type):
    dtype: torch.dtype  # set by each typed-tensor class

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, torch.Tensor) and obj.device.type == DEVICE_TYPE and obj.dtype == cls.dtype

    def __call__(cls, *args: Any, **kwargs: Any) -> torch.Tensor:
        # like torch_npu's constructors: `device=` (a string, torch.device or an index), else the current one
        device = kwargs.pop("device", None)
        if device is None:
            device_obj = torch.device(DEVICE_TYPE, STATE.current)
        elif isinstance(device, int):
            device_obj = torch.device(DEVICE_TYPE, device)
        else:
            device_obj = torch.device(device)
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


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu.typed_tensors")
