"""`ms_fmk_transplt verify` end to end on originals that assume a GPU (tests/data/verify_cuda/): the
transfer_to_npu reference where the CPU cannot be one, `--reference cpu` kept when asked for, and
the exception of the failing rank shown under torchrun and under mp.spawn."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import check_verify, run_verify

pytestmark = pytest.mark.slow  # each case is two or three training runs in subprocesses

SCRIPTS = Path(__file__).resolve().parent / "data" / "verify_cuda"
TIMEOUT_S = 900

# id -> (verify options, script and its arguments)
CASES = {
    "cuda_bound": (["--steps", "3"], ["python", "cuda_bound.py"]),
    "spawn_nccl": (["--steps", "3", "--devices", "2"], ["python", "spawn_nccl.py"]),
    "amp": (["--steps", "3"], ["python", "amp_scaler.py"]),
    "amp_cpu": (["--steps", "3", "--reference", "cpu"], ["python", "amp_scaler.py"]),
    "fail_torchrun": (["--steps", "3", "--nproc", "2"], ["python", "fail_rank.py"]),
    "fail_spawn": (["--steps", "3"], ["python", "fail_rank.py", "--spawn"]),
}


def _verify(case: str, tmp: Path) -> tuple[subprocess.CompletedProcess, dict]:
    options, command = CASES[case]
    return run_verify(options, command, SCRIPTS, tmp / f"{case}.json", TIMEOUT_S)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verify_cuda")
    with ThreadPoolExecutor(2) as pool:  # CI has two cores
        futures = {case: pool.submit(_verify, case, tmp) for case in CASES}
        return {case: future.result() for case, future in futures.items()}


_check = check_verify


def test_unconditional_cuda_is_identical_to_transfer_to_npu(runs):
    done, document = _check(runs, "cuda_bound", 0)
    assert "result: identical: 3 step(s), losses and every parameter bit for bit" in done.stdout
    assert document["reference"]["kind"] == "transfer"
    assert document["reference"]["why"].startswith(
        "the original needs CUDA on the CPU (AssertionError: Torch not"
    )
    assert document["cpu"]["steps"] == {} and document["transfer"]["losses"] == document["npu"]["losses"]
    (failure,) = document["failures"]["cpu"]
    assert failure == {
        "exception": "AssertionError: Torch not compiled with CUDA enabled",
        "site": "cuda_bound.py:11",
        "ranks": [0],
    }
    assert "cpu run's stderr" not in done.stdout  # not the reference: its exception line is enough


def test_a_launcher_per_gpu_with_nccl_trains_on_the_simulated_devices(runs):
    done, document = _check(runs, "spawn_nccl", 0)
    assert "identical: 3 step(s) on each of 2 ranks" in done.stdout
    assert document["reference"] == {
        "kind": "transfer",
        "why": "the original made no optimizer step on the CPU",
    }
    assert document["transfer"]["steps"] == document["npu"]["steps"] == {"0": 3, "1": 3}


def test_amp_switched_off_on_the_cpu_takes_the_transfer_reference(runs):
    done, document = _check(runs, "amp", 0)
    assert document["reference"]["kind"] == "transfer"
    assert "GradScaler is enabled, but CUDA is not available" in document["reference"]["why"]
    # asked for, the CPU stays the reference: it trained fp32 without loss scaling, so it differs
    done, document = _check(runs, "amp_cpu", 1)
    assert document["reference"] == {"kind": "cpu", "why": None} and document["transfer"] is None
    assert "different at step 1, rank 0: loss" in done.stdout


@pytest.mark.parametrize("case", ["fail_torchrun", "fail_spawn"])
def test_the_failing_ranks_exception_is_shown_first(runs, case):
    done, document = _check(runs, case, 4)
    assert document["reference"]["kind"] == "cpu"  # it made steps on the CPU: its failure is its own
    for side in ("cpu", "npu"):
        first = document["failures"][side][0]
        assert first == {
            "exception": "RuntimeError: rank 1 lost its data shard at step 1",
            "site": "fail_rank.py:16",
            "ranks": [1],
        }
        assert not any("ChildFailedError" in f["exception"] for f in document["failures"][side])
    assert "rank 1: RuntimeError: rank 1 lost its data shard at step 1 (fail_rank.py:16)" in done.stdout
