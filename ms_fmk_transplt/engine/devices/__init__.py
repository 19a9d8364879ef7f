"""Device evidence and per-device dispatch: which names hold a device, one file's calls into the
project's other modules, whether a literal is a device, and which alternatives of a dispatch
(or a CUDA-only guard) stay as written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.devices.cuda_only import CudaOnlyGuards
    from ms_fmk_transplt.engine.devices.device_evidence import (
        ACCELERATOR,
        CONVENTION,
        NAME_LISTS,
        PATTERN_LISTS,
        REPORTED_TEXT,
        DeviceAnswer,
        DeviceContext,
        DeviceSpec,
        code_of,
        literal_type,
        literals,
        short_name,
    )
    from ms_fmk_transplt.engine.devices.device_flow import choices
    from ms_fmk_transplt.engine.devices.dispatch_sites import POLICY, DeviceDispatch, Kept
    from ms_fmk_transplt.engine.devices.twins import Places

__all__ = [
    "ACCELERATOR",
    "CONVENTION",
    "NAME_LISTS",
    "PATTERN_LISTS",
    "POLICY",
    "REPORTED_TEXT",
    "CudaOnlyGuards",
    "DeviceAnswer",
    "DeviceContext",
    "DeviceDispatch",
    "DeviceSpec",
    "Kept",
    "Places",
    "choices",
    "code_of",
    "literal_type",
    "literals",
    "short_name",
]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {
    "ACCELERATOR": "device_evidence",
    "CONVENTION": "device_evidence",
    "CudaOnlyGuards": "cuda_only",
    "DeviceAnswer": "device_evidence",
    "DeviceContext": "device_evidence",
    "DeviceDispatch": "dispatch_sites",
    "DeviceSpec": "device_evidence",
    "Kept": "dispatch_sites",
    "NAME_LISTS": "device_evidence",
    "PATTERN_LISTS": "device_evidence",
    "POLICY": "dispatch_sites",
    "Places": "twins",
    "REPORTED_TEXT": "device_evidence",
    "choices": "device_flow",
    "code_of": "device_evidence",
    "literal_type": "device_evidence",
    "literals": "device_evidence",
    "short_name": "device_evidence",
}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
