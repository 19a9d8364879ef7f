"""2-process DDP over backend="hccl" on the simulated npu matches gloo on CPU."""

from __future__ import annotations

import json
import socket

import pytest
from conftest import HERE, run_python

SCRIPT = HERE / "scripts" / "ddp_script.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gloo_reference(out) -> None:
    """The plain-torch run on CPU that the simulated NPU is compared with.

    Stock torch's gloo has been seen (once in CI, 2026-11-24) to abort a rank at teardown with
    "terminate called without an active exception" after both ranks had finished. That run is
    torch's, not ours, so it gets one more try when that is all that went wrong; the simulated
    NPU's own run gets none.
    """
    for attempt in (1, 2):
        proc = run_python([str(SCRIPT), "gloo", "cpu", str(out), str(_free_port())])
        aborted = "terminated with signal SIGABRT" in proc.stderr
        if proc.returncode == 0 or attempt == 2 or not aborted:
            break
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_ddp_hccl_on_npu_matches_gloo_on_cpu(tmp_path):
    npu_out, cpu_out = tmp_path / "npu.json", tmp_path / "cpu.json"
    proc = run_python(["-m", "runtime_shim", str(SCRIPT), "hccl", "npu", str(npu_out), str(_free_port())])
    assert proc.returncode == 0, proc.stderr
    _gloo_reference(cpu_out)
    for rank in (0, 1):
        npu = json.loads((tmp_path / f"npu.json.{rank}").read_text())
        cpu = json.loads((tmp_path / f"cpu.json.{rank}").read_text())
        assert npu["device"] == f"npu:{rank}"
        assert npu["losses"] == cpu["losses"]
        assert npu["params"] == cpu["params"]
        assert npu["allreduce"] == cpu["allreduce"] == 3.0
    # the two ranks saw different data, so DDP really averaged gradients
    assert (
        json.loads((tmp_path / "npu.json.0").read_text())["losses"]
        != json.loads((tmp_path / "npu.json.1").read_text())["losses"]
    )


@pytest.mark.slow
def test_flat_buffer_collectives_take_every_shape_nccl_and_hccl_accept(tmp_path):
    out = tmp_path / "flat.json"
    proc = run_python([str(HERE / "scripts" / "flat_collectives.py"), str(out), str(_free_port())])
    assert proc.returncode == 0, proc.stderr[-3000:]
    gathered = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]
    # rank r's slice of sum over ranks of (arange(12) + rank)
    scattered = {0: [1.0, 3.0, 5.0, 7.0, 9.0, 11.0], 1: [13.0, 15.0, 17.0, 19.0, 21.0, 23.0]}
    for rank in (0, 1):
        results = json.loads((tmp_path / f"flat.json.{rank}").read_text())
        for form in ("flat", "stacked", "concat"):
            assert results[f"all_gather_into_tensor/{form}"] == gathered, form
            assert results[f"reduce_scatter_tensor/{form}"] == scattered[rank], form
        assert results["all_gather_into_tensor/0-dim"] == [1.0, 2.0]
