"""Dynamic shapes: operators whose npu input shapes, at one line of the script, change from step to step.

An Ascend NPU compiles an operator for the shapes it is given; shapes that change every step
(a sequence length that follows the batch) mean compiling again and again. A dispatch mode sees
every aten operator the process runs, on the native dispatch path as on the Python one (the mode
sits above the device's kernels). Per (operator, innermost line of the project that led there)
it keeps the set of input shape signatures (the shapes of its npu tensor arguments) of the
current optimizer step; at each step's end (torch.optim's global post hook) that set is compared
with the first step's. A pair whose set differs in any step is a finding, with the first
SHAPES_KEPT signatures seen. Operators with no project line on the stack (the autograd engine's
backward, on its own thread) are not recorded: their forward's line carries the finding. What
runs after the last step is not compared. The mode costs every operator a round trip through
Python (about 2x a small model's step time): ``RUNTIME_SHIM_FINDINGS_SHAPE_STEPS=N`` (default 20)
stops watching after N steps; 0 watches every step.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from runtime_shim.diagnostics.findings import SHAPES_KEPT, Sites

Signature = tuple[Any, ...]
#: distinct signatures counted per (operator, line): memory stays bounded when every step differs
SIGNATURES_COUNTED = 1000


def signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Signature | None:
    """The shapes of the npu tensors among an operator's arguments (lists one level down); None if none."""
    shapes: list[Any] = []
    found = False
    for value in (*args, *kwargs.values()):
        # is_cpu costs a fifth of device.type; no cuda tensor exists in a run on the simulated npu
        if isinstance(value, torch.Tensor):
            if not value.is_cpu:
                shapes.append(tuple(value.shape))
                found = True
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.Tensor):
            listed = tuple(tuple(t.shape) for t in value if isinstance(t, torch.Tensor) and not t.is_cpu)
            if listed:
                shapes.append(listed)
                found = True
    return tuple(shapes) if found else None


def signature_text(shapes: Signature) -> str:
    """``[4, 12, 16] x [16, 16]``; a tensor list as ``([2], [2])``."""

    def one(shape: Any) -> str:
        if shape and isinstance(shape[0], tuple):
            return "(" + ", ".join(str(list(s)) for s in shape) + ")"
        return str(list(shape))

    return " x ".join(one(shape) for shape in shapes)


class _Seen:
    __slots__ = ("dynamic", "first", "signatures", "steps")

    def __init__(self) -> None:
        self.first: frozenset[Signature] | None = None
        self.dynamic = False
        self.signatures: dict[Signature, None] = {}  # in order of appearance
        self.steps = 0


class ShapeRecorder(TorchDispatchMode):
    """Records shape signatures per (operator, project line) and step."""

    def __init__(self, sites: Sites, steps: int = 0) -> None:
        super().__init__()
        self.sites = sites
        self.steps_left = steps  # 0: every step; else the mode leaves after that many steps
        self.watching = False
        self.current: dict[tuple[Any, str, int], set[Signature]] = {}
        self.seen: dict[tuple[Any, str, int], _Seen] = {}

    def start(self) -> None:
        """Watch this thread's operators from now on, and close a step after each optimizer step."""
        handle = register_optimizer_step_post_hook(lambda optimizer, args, kwargs: self.close_step())
        hooks = handle.hooks_dict_ref()
        if hooks is not None and hasattr(hooks, "move_to_end"):
            # before the step recorder's hook, which may end the process at its step limit
            hooks.move_to_end(handle.id, last=False)
        self.__enter__()
        self.watching = True

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.watching:
            shapes = signature(args, kwargs)
            if shapes is not None:
                self._see(func, shapes)
        return func(*args, **kwargs)

    def _see(self, func: Any, shapes: Signature) -> None:
        frame: Any = self._frame()
        if frame is None:
            return
        key = (func, frame.f_code.co_filename, frame.f_lineno)
        found = self.current.get(key)
        if found is None:
            found = self.current[key] = set()
        found.add(shapes)

    def _frame(self) -> Any:
        frame: Any = sys._getframe(3)
        kind = self.sites.kind
        while frame is not None:
            if kind(frame.f_code.co_filename) == 1:
                return frame
            frame = frame.f_back
        return None

    def close_step(self) -> None:
        """End of a step: compare each (operator, line)'s signatures with its first step's."""
        if not self.watching:
            return
        current, self.current = self.current, {}
        self.steps_left -= 1
        if self.steps_left == 0:
            self._stop()
        for key, signatures in current.items():
            seen = self.seen.get(key)
            if seen is None:
                seen = self.seen[key] = _Seen()
            mine = frozenset(signatures)
            if seen.first is None:
                seen.first = mine
            elif mine != seen.first:
                seen.dynamic = True
            seen.steps += 1
            for shapes in signatures:
                if len(seen.signatures) < SIGNATURES_COUNTED:
                    seen.signatures.setdefault(shapes, None)

    def _stop(self) -> None:
        # leave the thread's mode stack when on top of it (the run is then at full speed again);
        # under another mode, stay as a pass-through
        self.watching = False
        if _get_current_dispatch_mode() is self:
            self.__exit__(None, None, None)

    def rows(self) -> list[dict[str, Any]]:
        """Report rows of the (operator, line) pairs whose shapes changed between steps."""
        rows = []
        for (func, filename, line), seen in self.seen.items():
            if not seen.dynamic:
                continue
            name = func.name() if hasattr(func, "name") else str(func)
            if name.endswith(".default"):
                name = name[: -len(".default")]
            listed = list(seen.signatures)
            rows.append(
                {
                    "kind": "dynamic_shapes",
                    "what": name,
                    "dependency_site": None,
                    "dependency_path": None,
                    "user_site": f"{os.path.abspath(filename)}:{line}",
                    "count": seen.steps,
                    "shapes": [signature_text(s) for s in listed[:SHAPES_KEPT]],
                    "distinct_shapes": len(listed),
                }
            )
        return rows
