"""``apex.amp``: Ascend apex's mixed precision, computed as apex computes it.

Opt levels: O0 keeps float32 (loss scale 1); O1 autocasts the npu's ops to float16 (the
casting policy of ``torch.autocast``, which on the simulated npu is the CPU one) with a
dynamic loss scale; O2 casts the model to float16 except batch norm and steps float32
master weights; O3 casts everything to float16 (loss scale 1). Dynamic scaling starts at
2**16, halves on an overflowing step (which is skipped) and doubles after 2000 clean steps,
as apex's LossScaler and ``torch.amp.GradScaler`` both do, so O1 here trains exactly like
autocast + GradScaler. ``combine_grad`` (one flat gradient buffer on a real NPU) only
changes speed there and is accepted as is.
"""

from __future__ import annotations

import contextlib
import functools
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

import torch

from runtime_shim.not_simulated import module_getattr as _module_getattr

__all__ = ["initialize", "load_state_dict", "master_params", "scale_loss", "state_dict"]

_OPT_LEVELS: dict[str, dict[str, Any]] = {
    "O0": {"cast_model_type": torch.float32, "patch": False, "keep_bn": None, "master": False, "scale": 1.0},
    "O1": {"cast_model_type": None, "patch": True, "keep_bn": None, "master": None, "scale": "dynamic"},
    "O2": {
        "cast_model_type": torch.float16,
        "patch": False,
        "keep_bn": True,
        "master": True,
        "scale": "dynamic",
    },
    "O3": {"cast_model_type": torch.float16, "patch": False, "keep_bn": False, "master": False, "scale": 1.0},
}


class LossScaler:
    """One loss's scale: static, or dynamic with overflow skip, halving and growth."""

    def __init__(
        self,
        loss_scale: float | str,
        init_scale: float = 2.0**16,
        scale_factor: float = 2.0,
        scale_window: int = 2000,
        min_loss_scale: float | None = None,
        max_loss_scale: float = 2.0**24,
    ) -> None:
        self.dynamic = loss_scale == "dynamic"
        self._loss_scale = min(max_loss_scale, init_scale) if self.dynamic else float(loss_scale)
        self._scale_factor = scale_factor
        self._scale_window = scale_window
        self._min_loss_scale = min_loss_scale
        self._max_loss_scale = max_loss_scale
        self._unskipped = 0
        self._has_overflow = False

    def loss_scale(self) -> float:
        """The current scale."""
        return self._loss_scale

    def unscale(self, model_grads: list[torch.Tensor], master_grads: list[torch.Tensor]) -> None:
        """Write ``model_grad / scale`` into each master grad; note any inf or nan (dynamic only)."""
        inverse = 1.0 / self._loss_scale
        overflow = False
        for model_grad, master_grad in zip(model_grads, master_grads):
            if self.dynamic and not overflow:
                overflow = not bool(torch.isfinite(model_grad).all())
            if master_grad is model_grad:
                master_grad.mul_(inverse)
            else:
                torch.mul(model_grad.to(master_grad.dtype), inverse, out=master_grad)
        self._has_overflow = overflow

    def update_scale(self) -> bool:
        """Adjust the scale after a step; True if that step must be skipped."""
        skip = False
        if self.dynamic and self._has_overflow:
            skip = True
            self._loss_scale /= self._scale_factor
            if self._min_loss_scale is not None:
                self._loss_scale = max(self._min_loss_scale, self._loss_scale)
            self._unskipped = 0
        else:
            self._unskipped += 1
        if self.dynamic and self._unskipped == self._scale_window:
            self._loss_scale = min(self._max_loss_scale, self._loss_scale * self._scale_factor)
            self._unskipped = 0
        self._has_overflow = False
        return skip


@dataclass
class _Stash:
    """What amp keeps on each optimizer: master/model parameter pairs and the skip flag."""

    pairs: list[tuple[torch.nn.Parameter, torch.nn.Parameter]] = field(default_factory=list)
    skip_next: bool = False


@dataclass
class _AmpState:
    enabled: bool = False
    opt_level: str = "O0"
    autocast_device: str | None = None
    combine_grad: bool = False
    scalers: list[LossScaler] = field(default_factory=list)


_STATE = _AmpState()


def _as_bool(value: Any, name: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if value in ("True", "False"):
        return value == "True"
    raise ValueError(f"amp.initialize: {name} must be True, False, 'True' or 'False', not {value!r}")


def initialize(
    models: Any,
    optimizers: Any = None,
    enabled: bool = True,
    opt_level: str = "O1",
    cast_model_type: torch.dtype | None = None,
    patch_torch_functions: bool | None = None,
    keep_batchnorm_fp32: bool | str | None = None,
    master_weights: bool | None = None,
    loss_scale: float | str | None = None,
    cast_model_outputs: torch.dtype | None = None,
    num_losses: int = 1,
    verbosity: int = 1,
    min_loss_scale: float | None = None,
    max_loss_scale: float = 2.0**24,
    combine_grad: bool | None = None,
    combine_ddp: bool | None = None,
    ddp_replica_count: int = 4,
    user_cast_preferred: bool | None = None,
    check_combined_tensors: bool | None = None,
) -> Any:
    """Prepare model(s) and optimizer(s) for ``opt_level``; returns them as they were passed."""
    _disable_autocast()
    _STATE.enabled = enabled
    if not enabled:
        return models if optimizers is None else (models, optimizers)
    if opt_level not in _OPT_LEVELS:
        raise ValueError(f"amp.initialize: opt_level={opt_level!r} is not one of O0, O1, O2, O3")
    level = _OPT_LEVELS[opt_level]
    cast_type = cast_model_type if cast_model_type is not None else level["cast_model_type"]
    patch = patch_torch_functions if patch_torch_functions is not None else level["patch"]
    keep_bn = _as_bool(keep_batchnorm_fp32, "keep_batchnorm_fp32")
    keep_bn = level["keep_bn"] if keep_bn is None else keep_bn
    master = master_weights if master_weights is not None else level["master"]
    scale = loss_scale if loss_scale is not None else level["scale"]
    if scale != "dynamic" and not isinstance(scale, (int, float)):
        raise ValueError(f"amp.initialize: loss_scale must be a number or 'dynamic', not {scale!r}")

    model_list = list(models) if isinstance(models, (list, tuple)) else [models]
    optimizer_list = (
        []
        if optimizers is None
        else list(optimizers)
        if isinstance(optimizers, (list, tuple))
        else [optimizers]
    )
    if cast_type is not None and cast_type != torch.float32:
        for model in model_list:
            _cast_model(model, cast_type, keep_bn=bool(keep_bn))
            output_type = cast_model_outputs or torch.float32
            model.forward = _casting_forward(model.forward, cast_type, output_type)
    for optimizer in optimizer_list:
        _prepare_optimizer(optimizer, master=bool(master))

    _STATE.opt_level = opt_level
    _STATE.combine_grad = bool(combine_grad)
    _STATE.scalers = [
        LossScaler(scale, min_loss_scale=min_loss_scale, max_loss_scale=max_loss_scale)
        for _ in range(num_losses)
    ]
    _STATE.autocast_device = None
    if patch:
        # apex O1 patches torch's functions for the whole process: autocast switched on
        # for the model's device type does the same casting.
        device = next((p.device.type for m in model_list for p in m.parameters()), "cpu")
        torch.set_autocast_dtype(device, torch.float16)
        torch.set_autocast_enabled(device, True)
        _STATE.autocast_device = device
    if optimizers is None:
        return models
    return models, optimizers


def _disable_autocast() -> None:
    if _STATE.autocast_device is not None:
        torch.set_autocast_enabled(_STATE.autocast_device, False)
        torch.clear_autocast_cache()
        _STATE.autocast_device = None


def _cast_model(model: torch.nn.Module, dtype: torch.dtype, keep_bn: bool) -> None:
    for module in model.modules():
        if keep_bn and isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            continue
        for param in module.parameters(recurse=False):
            if param.is_floating_point():
                param.data = param.data.to(dtype)
        for name, buffer in module.named_buffers(recurse=False):
            if buffer.is_floating_point():
                setattr(module, name, buffer.to(dtype))


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value


def _casting_forward(forward: Any, input_type: torch.dtype, output_type: torch.dtype) -> Any:
    @functools.wraps(forward)
    def cast_forward(*args: Any, **kwargs: Any) -> Any:
        return _cast(forward(*_cast(args, input_type), **_cast(kwargs, input_type)), output_type)

    return cast_forward


def _prepare_optimizer(optimizer: torch.optim.Optimizer, master: bool) -> None:
    stash = _Stash()
    if master:
        for group in optimizer.param_groups:
            params = []
            for param in group["params"]:
                if param.dtype == torch.float16:
                    copy = torch.nn.Parameter(param.detach().clone().float())
                    stash.pairs.append((param, copy))
                    params.append(copy)
                else:
                    params.append(param)
            group["params"] = params
    original = getattr(optimizer, "_amp_original", None) or (optimizer.step, optimizer.zero_grad)
    step, zero_grad = original

    @functools.wraps(step)
    def amp_step(*args: Any, **kwargs: Any) -> Any:
        if stash.skip_next:
            # The scaled gradients overflowed: apex leaves the weights as they are.
            stash.skip_next = False
            return None
        result = step(*args, **kwargs)
        with torch.no_grad():
            for model_param, master_param in stash.pairs:
                model_param.copy_(master_param)
        return result

    @functools.wraps(zero_grad)
    def amp_zero_grad(set_to_none: bool = True) -> None:
        zero_grad(set_to_none)
        for model_param, _ in stash.pairs:
            if set_to_none:
                model_param.grad = None
            elif model_param.grad is not None:
                model_param.grad.zero_()

    optimizer._amp_original = original  # type: ignore[attr-defined]  # apex keeps its state on the optimizer
    optimizer._amp_stash = stash  # type: ignore[attr-defined]  # as above
    optimizer.step = amp_step  # type: ignore[method-assign]  # apex wraps the instance's step
    optimizer.zero_grad = amp_zero_grad  # type: ignore[method-assign]  # and its zero_grad


def _grads(optimizer: torch.optim.Optimizer) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    stash: _Stash = optimizer._amp_stash  # type: ignore[attr-defined]  # set by _wrap_optimizer
    masters = {id(master): model for model, master in stash.pairs}
    model_grads: list[torch.Tensor] = []
    master_grads: list[torch.Tensor] = []
    for param in master_params(optimizer):
        model = masters.get(id(param))
        if model is None:
            if param.grad is not None:
                model_grads.append(param.grad)
                master_grads.append(param.grad)
        elif model.grad is not None:
            if param.grad is None:
                param.grad = torch.empty_like(param)
            model_grads.append(model.grad)
            master_grads.append(param.grad)
    return model_grads, master_grads


@contextlib.contextmanager
def scale_loss(
    loss: torch.Tensor,
    optimizers: Any,
    loss_id: int = 0,
    model: Any = None,
    delay_unscale: bool = False,
    delay_overflow_check: bool = False,
) -> Iterator[torch.Tensor]:
    """Yield ``loss * scale`` for backward; afterwards unscale the grads and decide the step."""
    if not _STATE.enabled or not _STATE.scalers:
        yield loss
        return
    optimizer_list = list(optimizers) if isinstance(optimizers, (list, tuple)) else [optimizers]
    for optimizer in optimizer_list:
        if not hasattr(optimizer, "_amp_stash"):
            raise RuntimeError("amp.scale_loss: the optimizer was not passed to amp.initialize")
    scaler = _STATE.scalers[loss_id]
    device = _STATE.autocast_device
    # Backward runs outside the forward's autocast, as with torch.autocast blocks.
    if device is not None:
        torch.set_autocast_enabled(device, False)
    try:
        yield loss.float() * scaler.loss_scale()
    finally:
        if device is not None:
            torch.clear_autocast_cache()
            torch.set_autocast_enabled(device, True)
    if delay_unscale:
        return
    for optimizer in optimizer_list:
        scaler.unscale(*_grads(optimizer))
        overflow = scaler._has_overflow
        if overflow:
            break
    if scaler.update_scale():
        for optimizer in optimizer_list:
            optimizer._amp_stash.skip_next = True


def master_params(optimizer: torch.optim.Optimizer) -> Iterator[torch.Tensor]:
    """The parameters the optimizer steps (float32 masters under O2)."""
    for group in optimizer.param_groups:
        yield from group["params"]


def state_dict(destination: dict[str, Any] | None = None) -> dict[str, Any]:
    """Loss scaler state for checkpoints: ``{"loss_scaler0": {"loss_scale", "unskipped"}, ...}``."""
    out = OrderedDict() if destination is None else destination
    for index, scaler in enumerate(_STATE.scalers):
        out[f"loss_scaler{index}"] = {"loss_scale": scaler._loss_scale, "unskipped": scaler._unskipped}
    return out


def load_state_dict(state: dict[str, Any]) -> None:
    """Restore what :func:`state_dict` saved (one entry per loss of amp.initialize)."""
    if len(state) != len(_STATE.scalers):
        raise ValueError(
            f"amp.load_state_dict: {len(state)} loss scalers in the checkpoint, "
            f"{len(_STATE.scalers)} set up by amp.initialize"
        )
    for index, scaler in enumerate(_STATE.scalers):
        key = f"loss_scaler{index}"
        if key not in state:
            raise KeyError(f"amp.load_state_dict: no {key!r} in the checkpoint (keys: {', '.join(state)})")
        scaler._loss_scale = float(state[key]["loss_scale"])
        scaler._unskipped = int(state[key]["unskipped"])


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("apex.amp")
