"""Fixtures named runnable_*.in.py are programs: the original runs on the CPU (its CUDA branch
off), the converted .out.py on the simulated NPU (its NPU branch on), and both print the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two interpreter starts with torch per case

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted((ROOT / "tests" / "fixtures").glob("*/*/runnable_*.in.py"))

pytest.importorskip("torch")


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNTIME_SHIM", "CUDA"))}
    env.update(PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    return subprocess.Popen(
        [sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _output(process: subprocess.Popen[str]) -> str:
    try:
        stdout, stderr = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 0, stderr[-3000:]
    return stdout


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_converted_program_prints_what_the_original_prints(case: Path) -> None:
    converted = case.with_name(case.name.replace(".in.py", ".out.py"))
    assert converted.exists(), f"{case.name} is runnable but has no converted twin"
    # the two programs run side by side: one thread each, on a machine with two cores or more
    original_run = _start([case.name], case.parent)
    converted_run = _start(["-m", "runtime_shim", converted.name], case.parent)
    original, printed = _output(original_run), _output(converted_run)
    assert original.strip(), "the original printed nothing to compare"
    assert printed == original


def test_there_are_runnable_fixtures() -> None:
    assert CASES
