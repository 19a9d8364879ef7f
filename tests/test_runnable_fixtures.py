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


def _run(args: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNTIME_SHIM", "CUDA"))}
    env.update(PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_converted_program_prints_what_the_original_prints(case: Path) -> None:
    converted = case.with_name(case.name.replace(".in.py", ".out.py"))
    assert converted.exists(), f"{case.name} is runnable but has no converted twin"
    original = _run([case.name], case.parent)
    assert original.strip(), "the original printed nothing to compare"
    assert _run(["-m", "runtime_shim", converted.name], case.parent) == original


def test_there_are_runnable_fixtures() -> None:
    assert CASES
