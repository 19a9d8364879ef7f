"""The step recorder's patch of torch (diagnostics/step_record.py): ``torch.autograd.backward``
(what ``Tensor.backward()`` calls) tells the recorder which tensor backward ran on."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
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
