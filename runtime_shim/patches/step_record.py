"""The step recorder's patches of torch (diagnostics/step_record.py): ``torch.autograd.backward``
(what ``Tensor.backward()`` calls) tells the recorder which tensor backward ran on, and entering an
enabled ``torch.autocast`` (``torch.amp.autocast``, the device modules' ``amp.autocast``, all one
class) tells it the dtype the run computes in."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.amp.autocast_mode
import torch.autograd


def record_backward(on_backward: Callable[[torch.Tensor], None]) -> None:
    """Wrap ``torch.autograd.backward`` so that ``on_backward`` sees the first tensor of each call."""
    backward = torch.autograd.backward

    @functools.wraps(backward)
    def recording_backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
        if isinstance(first, torch.Tensor):
            on_backward(first)
        return backward(tensors, *args, **kwargs)

    torch.autograd.backward = recording_backward


def record_autocast(on_autocast: Callable[[torch.dtype], None]) -> None:
    """Wrap ``autocast.__enter__`` so that ``on_autocast`` sees the dtype of each enabled autocast."""
    autocast = torch.amp.autocast_mode.autocast
    enter = autocast.__enter__

    @functools.wraps(enter)
    def recording_enter(self: Any) -> Any:
        entered = enter(self)
        if getattr(self, "_enabled", False) and isinstance(getattr(self, "fast_dtype", None), torch.dtype):
            on_autocast(self.fast_dtype)
        return entered

    autocast.__enter__ = recording_enter  # type: ignore[method-assign]  # the patch is the point
