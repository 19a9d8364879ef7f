"""The README's main job, end to end: convert sample_models/, then train every converted script
on the simulated NPU and compare its losses with the original on the CPU, bit for bit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("torch")


def test_demo_trains_every_converted_sample_identically(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "demo.py"), "--steps", "3", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    verdicts = [line for line in done.stdout.splitlines() if "losses" in line]
    assert len(verdicts) == 6 and all("bit-identical" in line for line in verdicts), done.stdout
    assert (tmp_path / "sample_models_msft" / "msFmkTranspltlog.txt").exists()
