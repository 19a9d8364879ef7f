"""Settings a training script makes that slow an NPU down: operators compiled online, and the
task queue turned off through the environment."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ms_fmk_transplt.advice.walk import Hit, Walked, argument

_COMPILE_MODE = {"torch_npu.npu.set_compile_mode", "torch.npu.set_compile_mode"}
_ENVIRON = "os.environ"


def compile_mode(walked: Walked) -> Iterator[Hit]:
    """`set_compile_mode(jit_compile=True)`: every operator compiled online. Left unset, recent
    torch_npu releases already use the binary operators, so nothing is advised there."""
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        if walked.qualified(call.func) in _COMPILE_MODE:
            value = argument(call, 0, "jit_compile")
            if isinstance(value, cst.Name) and value.value == "True":
                yield "compile_mode", call, "torch_npu.npu.set_compile_mode"


def _text(node: cst.BaseExpression | None) -> str | None:
    value = node.evaluated_value if isinstance(node, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def task_queue(walked: Walked) -> Iterator[Hit]:
    """`os.environ["TASK_QUEUE_ENABLE"] = "0"`, `os.environ.setdefault(...)`, `os.putenv(...)`."""
    for site in walked.item_assigns:
        assign = site.node
        assert isinstance(assign, cst.Assign)
        target = assign.targets[0].target
        assert isinstance(target, cst.Subscript)
        if walked.qualified(target.value) != _ENVIRON or len(target.slice) != 1:
            continue
        key = target.slice[0].slice
        if (
            isinstance(key, cst.Index)
            and _text(key.value) == "TASK_QUEUE_ENABLE"
            and _text(assign.value) == "0"
        ):
            yield "task_queue", assign, "TASK_QUEUE_ENABLE"
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        if walked.qualified(call.func) not in (f"{_ENVIRON}.setdefault", "os.putenv") or len(call.args) != 2:
            continue
        if _text(call.args[0].value) == "TASK_QUEUE_ENABLE" and _text(call.args[1].value) == "0":
            yield "task_queue", call, "TASK_QUEUE_ENABLE"


DETECTORS = (compile_mode, task_queue)
