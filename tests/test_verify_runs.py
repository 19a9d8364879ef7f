"""`ms_fmk_transplt verify` end to end on small scripts (tests/data/verify/): identical, different
(device-dependent), hard-coded CUDA, hand-written updates with a reused conversion, and 2 ranks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import check_verify, run_verify

pytestmark = pytest.mark.slow  # each case is two training runs in subprocesses

SCRIPTS = Path(__file__).resolve().parent / "data" / "verify"
TIMEOUT_S = 600

# id -> (verify options, script and its arguments)
CASES = {
    "identical": (["--steps", "6"], ["python", "train_mlp.py", "--epochs", "2"]),
    "different": (["--steps", "5"], ["python", "device_dependent.py"]),
    # the CPU kept as the reference (auto takes transfer_to_npu: tests/test_verify_transfer_runs.py)
    "cuda_only": (["--steps", "4", "--reference", "cpu"], ["python", "cuda_only.py"]),
    "by_hand": (["--steps", "3", "--converted", "{converted}"], ["python", "manual_sgd.py"]),
    "ddp": (["--steps", "3", "--nproc", "2"], ["python", "ddp_train.py"]),
    "separate_modules": (["--steps", "3"], ["python", "separate_modules.py"]),
}


def _verify(case: str, tmp: Path) -> tuple[subprocess.CompletedProcess, dict]:
    options, command = CASES[case]
    options = [o.replace("{converted}", str(tmp / "converted" / "verify_msft")) for o in options]
    return run_verify(options, command, SCRIPTS, tmp / f"{case}.json", TIMEOUT_S)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verify")
    subprocess.run(
        [sys.executable, "-m", "ms_fmk_transplt", "-i", str(SCRIPTS), "-o", str(tmp / "converted"), "-q"],
        check=True,
    )
    with ThreadPoolExecutor(2) as pool:  # CI has two cores
        futures = {case: pool.submit(_verify, case, tmp) for case in CASES}
        return {case: future.result() for case, future in futures.items()}


_check = check_verify


def test_identical(runs):
    done, document = _check(runs, "identical", 0)
    assert document["reference"] == {"kind": "cpu", "why": None} and document["failures"] == {}
    assert "result: identical: 6 step(s), losses and every parameter bit for bit" in done.stdout
    assert document["cpu"]["losses"] == document["npu"]["losses"] and len(document["npu"]["losses"]["0"]) == 6
    assert document["operator_check"] == []
    assert document["npu_peak_memory"]["0"]["npu:0"]["allocated"] > 0


def test_device_dependent_script_is_reported_at_its_first_difference(runs):
    done, document = _check(runs, "different", 1)
    assert document["first_difference"] == {
        "step": 3,
        "rank": 0,
        "what": "parameter head.weight float32[1, 12] has different values",
        "loss": None,
        "parameter": "head.weight",
    }
    assert "      first parameter that differs: head.weight" in done.stdout


def test_hard_coded_cuda_with_the_cpu_reference_runs_the_converted_script_alone(runs):
    done, document = _check(runs, "cuda_only", 5)
    assert (
        "not compared: the original cannot run on the CPU (AssertionError: Torch not compiled" in done.stdout
    )
    assert document["npu"]["steps"] == {"0": 4} and document["cpu"]["steps"] == {}
    assert document["reference"] == {"kind": "cpu", "why": None} and document["transfer"] is None
    mm = [row for row in document["operator_check"] if row["op"] == "mm"]
    assert mm == [
        {
            "op": "mm",
            "count": 8,
            "status": "unsupported_dtype",
            "dtypes": "fp64",
            "first_call_site": "cuda_only.py:16",
        }
    ]


def test_hand_written_updates_in_a_reused_conversion(runs):
    done, document = _check(runs, "by_hand", 0)
    assert "using the conversion in" in done.stderr
    assert document["npu"]["steps"] == {"0": 3}


def test_two_ranks_under_torchrun(runs):
    done, document = _check(runs, "ddp", 0)
    assert "identical: 3 step(s) on each of 2 ranks" in done.stdout
    assert document["npu"]["steps"] == document["cpu"]["steps"] == {"0": 3, "1": 3}
    assert set(document["npu_peak_memory"]) == {"0", "1"}


def test_parameters_of_modules_without_a_common_root_are_compared_each_with_itself(runs):
    """Two parameters named `weight` of one shape (an Embedding's and a Linear's): no false difference."""
    done, _ = _check(runs, "separate_modules", 0)
    assert "result: identical: 3 step(s), losses and every parameter bit for bit" in done.stdout


FINDINGS_LIB = """\
import torch


def make_scaler():
    return torch.cuda.amp.GradScaler()
"""

FINDINGS_SCRIPT = """\
import torch
from fakelib import amp_utils

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = torch.nn.Linear(8, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = amp_utils.make_scaler()
for step in range(4):
    x = torch.randn(2 + step, 8).to(device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


VERIFY = [sys.executable, "-m", "ms_fmk_transplt", "verify"]


def test_runtime_findings_name_the_dependency_and_the_original_line(tmp_path):
    """A library's CUDA GradScaler and a batch that grows per step: reported, mapped to train.py's
    own lines. The library is not the user's to convert: its scaler disables itself on the NPU.
    Against transfer_to_npu (the reference the CPU's disabled scaler calls for) the port trains
    without loss scaling, so it differs at step 1, and the finding says why; against the CPU
    (whose scaler is off too) it is identical."""
    (tmp_path / "deps" / "fakelib").mkdir(parents=True)
    (tmp_path / "deps" / "fakelib" / "__init__.py").write_text("")
    (tmp_path / "deps" / "fakelib" / "amp_utils.py").write_text(FINDINGS_LIB)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "train.py").write_text(FINDINGS_SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(tmp_path / "deps")}

    def verify(*options: str) -> tuple[subprocess.CompletedProcess, dict]:
        report = tmp_path / "report.json"
        done = subprocess.run(
            [*VERIFY, "--steps", "4", *options, "--report", str(report), "--", "python", "project/train.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        return done, json.loads(report.read_text())

    done, document = verify()
    assert done.returncode == 1, done.stdout + done.stderr
    text = done.stdout
    assert document["reference"]["kind"] == "transfer"
    assert document["first_difference"]["step"] == 1 and document["first_difference"]["parameter"] is None
    assert (
        "  CUDA still touched: torch GradScaler('cuda') disabled: CUDA is not available (no loss scaling)"
        " at deps/fakelib/amp_utils.py:5 <- project/train.py:8 (x1)"
    ) in text, text
    assert "  dynamic shapes: aten::addmm at project/train.py:11, shapes [4] x [2, 8] x [8, 4] / " in text, (
        text
    )
    kinds = {(f["kind"], f["user_site"]) for f in document["runtime_findings"]}
    assert ("amp_disabled", "project/train.py:8") in kinds and (
        "dynamic_shapes",
        "project/train.py:11",
    ) in kinds
    done, document = verify("--reference", "cpu")
    assert done.returncode == 0 and document["reference"]["kind"] == "cpu", done.stdout + done.stderr
    assert ("amp_disabled", "project/train.py:8") in {
        (f["kind"], f["user_site"]) for f in document["runtime_findings"]
    }
