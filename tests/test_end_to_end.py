"""The README's main job, end to end: convert sample_models/, then `ms_fmk_transplt verify` every
converted script on the simulated NPU against the original on the CPU, bit for bit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # subprocesses and training runs: the --runslow tier

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("torch")


def test_demo_trains_every_converted_sample_identically(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "demo.py"), "--steps", "3", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    verdicts = [line for line in done.stdout.splitlines() if " steps  cpu " in line]
    samples = [p for p in (ROOT / "sample_models").iterdir() if p.is_dir()]
    assert len(verdicts) == len(samples), done.stdout  # every sample model, each once
    assert all(line.endswith("IDENTICAL") for line in verdicts), done.stdout
    assert (tmp_path / "sample_models_msft" / "msFmkTranspltlog.txt").exists()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_launches_the_converted_ddp_script_on_the_simulated_npu(tmp_path: Path) -> None:
    """`torchrun ... -m runtime_shim train.py` (hccl on npu) == `torchrun train.py` (gloo on CPU)."""
    import os

    from ms_fmk_transplt.run import Options, convert_project

    converted = Path(
        convert_project(Options(source=ROOT / "sample_models" / "ddp_trainer", output=tmp_path)).output_root
    )
    torchrun = Path(sys.executable).with_name("torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = []
    for cwd, extra in ((ROOT / "sample_models" / "ddp_trainer", []), (converted, ["-m", "runtime_shim"])):
        command = [
            str(torchrun),
            "--nproc-per-node",
            "2",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(_free_port()),
            *extra,
            "train_ddp.py",
            "--steps",
            "3",
        ]
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        # Stock torch's gloo now and then aborts a rank while the process exits ("terminate called
        # without an active exception": seen in CI on 2026-11-27, and 1 run in 20 of the original
        # script here), after the script has finished and printed its last line. The original's
        # numbers are complete then; the simulated NPU's run gets no such allowance (as in
        # tests/runtime/test_distributed.py).
        teardown_abort = (
            not extra
            and "terminate called without an active exception" in done.stderr
            and "accuracy after reload" in done.stdout
        )
        assert done.returncode == 0 or teardown_abort, done.stderr[-3000:]
        runs.append([line for line in done.stdout.splitlines() if line.startswith("step=")])
    assert len(runs[0]) == 3 and runs[0] == runs[1]
