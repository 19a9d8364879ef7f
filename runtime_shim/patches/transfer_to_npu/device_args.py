"""Rewriting the device and backend arguments of a call from CUDA to the npu.

torch_npu's transfer_to_npu replaces the substring ``cuda`` in every string argument of a
patched function (``torch.load("cuda_ckpt.pt")`` would open ``npu_ckpt.pt``). Here only values
that *are* a CUDA device (``"cuda"``, ``"cuda:1"``, ``torch.device("cuda", 1)``) or a backend
naming nccl (``"nccl"``, ``"cuda:nccl,cpu:gloo"``) change; any other string is left as written.
"""

from __future__ import annotations

import re
from typing import Any

import torch

_CUDA_DEVICE = re.compile(r"\s*cuda\s*(?::\s*(\d+)\s*)?")
_BACKEND_PART = re.compile(r"\s*(?:(cuda|cpu|npu)\s*:\s*)?(\w+)\s*")
#: Keyword arguments that carry a device, as torch_npu's transfer_to_npu lists them.
DEVICE_KWARGS = ("device", "device_type", "map_location", "device_id")


def map_device(value: Any, *, ints: bool = False) -> Any:
    """``value`` with a CUDA device turned into the same npu device; anything else unchanged.

    ``ints`` maps a bare device index too (``Tensor.to(0)``, ``Module.to(0)``), never a bool.
    """
    if isinstance(value, str):
        match = _CUDA_DEVICE.fullmatch(value)
        if match is None:
            return value
        return "npu" if match.group(1) is None else f"npu:{int(match.group(1))}"
    if isinstance(value, torch.device):
        if value.type != "cuda":
            return value
        return torch.device("npu") if value.index is None else torch.device("npu", value.index)
    if ints and isinstance(value, int) and not isinstance(value, bool):
        return f"npu:{value}"
    if isinstance(value, dict):
        # map_location={"cuda:0": "cuda:1"}: keys and values are device names.
        return {map_device(k): map_device(v) for k, v in value.items()}
    return value


def map_args(args: tuple[Any, ...], *, ints: bool = False) -> tuple[Any, ...]:
    """Positional arguments with each CUDA device mapped (see ``map_device``)."""
    return tuple(map_device(a, ints=ints) for a in args)


def map_kwargs(kwargs: dict[str, Any], *, ints: bool = False) -> dict[str, Any]:
    """Keyword arguments with the device ones (``DEVICE_KWARGS``, ``device_ids``) mapped.

    A device keyword's bare index is a CUDA device (``device=0``); ``device_ids`` entries are
    mapped as indices only when ``ints`` is set.
    """
    out = dict(kwargs)
    for key in DEVICE_KWARGS:
        if out.get(key) is not None:
            out[key] = map_device(out[key], ints=True)
    ids = out.get("device_ids")
    if isinstance(ids, (list, tuple)):
        out["device_ids"] = type(ids)(map_device(i, ints=ints) for i in ids)
    return out


def map_backend(value: Any) -> Any:
    """A process-group backend with nccl as hccl and cuda as npu: ``"cuda:nccl,cpu:gloo"``."""
    if not isinstance(value, str):
        return value
    parts = value.split(",")
    matches = [_BACKEND_PART.fullmatch(p) for p in parts]
    if not all(matches):
        return value
    out = []
    for match in matches:
        assert match is not None
        device, name = match.group(1), match.group(2)
        name = "hccl" if name.lower() == "nccl" else name
        out.append(name if device is None else f"{'npu' if device == 'cuda' else device}:{name}")
    mapped = ",".join(out)
    return mapped if mapped != ",".join(p.strip() for p in parts) else value
