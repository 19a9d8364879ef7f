"""npu tensors shared with child processes (runtime_shim/runtime/ipc.py): hogwild, Queue, Pool."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import HERE, run_python

from runtime_shim.runtime import ipc

SCRIPT = HERE / "scripts" / "npu_ipc.py"


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_npu_tensors_are_shared_with_child_processes(tmp_path, method):
    proc = run_python(["-m", "runtime_shim", str(SCRIPT), method], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {
        "hogwild_exact": True,  # two children's in-place writes, both seen by the parent
        "param_device": "npu:0",
        "is_shared": True,
        "hogwild_trained": True,  # children training a shared npu model move its weights
        "exit_codes": [0, 0],
        "queue_device": "npu:0",
        "queue_values": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
        "view_aliases": True,  # a tensor and its view arrive over one storage
        "child_sees_parent_write": 75.0,  # 15 + 6 * 10: the producer reads the parent's add_
        "pool_device": "npu",
        "pool_write": [2.0, 2.0, 2.0],  # a Pool worker's mul_ lands in the parent's tensor
    }


def test_share_memory_moves_npu_bytes_in_place(npu):
    t = torch.arange(4.0, device="npu")
    view = t[1:]
    assert not t.is_shared()
    t.share_memory_()
    assert t.is_shared() and view.is_shared()
    view.add_(1)  # the view still aliases after the move
    assert t.cpu().tolist() == [0.0, 2.0, 3.0, 4.0]
    assert t.device.type == "npu"


@pytest.mark.slow
def test_forked_children_use_the_npu_unless_strict_mode_refuses_as_torch_npu(tmp_path):
    proc = run_python(["-m", "runtime_shim", str(HERE / "scripts" / "npu_fork.py")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    refused = f"RuntimeError: {ipc.FORK_MESSAGE}"
    # a fork DataLoader worker's npu items arrive in the parent over shared memory
    assert seen["loader"] == {
        "devices": ["npu:0"],
        "values": [[[0.0, 0.0], [1.0, 1.0]], [[2.0, 2.0], [3.0, 3.0]]],
    }
    assert seen["loader_strict"] == {"error": refused}  # torch_npu: NPU in a forked worker
    assert seen["fork"] == 0 and seen["fork_strict"] == 1
    assert refused in proc.stderr
