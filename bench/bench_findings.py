#!/usr/bin/env python3
"""What the runtime findings (RUNTIME_SHIM_FINDINGS_REPORT) cost a training step on the simulated npu.

Runs one small training script (a two-layer transformer encoder on token batches, AdamW) under
``python -m runtime_shim`` with the findings off, on with every step's shapes watched
(``RUNTIME_SHIM_FINDINGS_SHAPE_STEPS=0``) and on as by default (shapes watched for 20 steps), in
turn, ``--rounds`` times each, and prints the median step time of each setting (the script times its own steps after ten warm-up
steps, by the process's CPU time: steadier than the wall clock on a shared machine) and their ratio.

    python bench/bench_findings.py [--steps 60] [--rounds 2] [--dispatch native|python]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """\
import sys, time
import torch
import torch_npu  # noqa: F401

torch.manual_seed(0)
steps = int(sys.argv[1])
layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
model = torch.nn.Sequential(torch.nn.Embedding(100, 64), torch.nn.TransformerEncoder(layer, 2),
                            torch.nn.Linear(64, 100)).to("npu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
times = []
for step in range(steps):
    tokens = torch.randint(0, 100, (8, 32)).to("npu")
    started = time.process_time()
    loss = torch.nn.functional.cross_entropy(model(tokens).reshape(-1, 100), tokens.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    loss.item()
    times.append(time.process_time() - started)
print(sorted(times[10:])[len(times[10:]) // 2])
"""


def _run(script: Path, steps: int, report: Path | None, dispatch: str, shape_steps: str = "") -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNTIME_SHIM_")}
    env["PYTHONPATH"] = str(ROOT)
    env["RUNTIME_SHIM_OPCHECK"] = "off"
    env["OMP_NUM_THREADS"] = "1"  # one thread: CPU time is then the step's own work
    env["RUNTIME_SHIM_NATIVE_DISPATCH"] = "0" if dispatch == "python" else "1"
    if report is not None:
        env["RUNTIME_SHIM_FINDINGS_REPORT"] = str(report)
        env["RUNTIME_SHIM_FINDINGS_SHAPE_STEPS"] = shape_steps
    done = subprocess.run(
        [sys.executable, "-m", "runtime_shim", str(script), str(steps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Print the median step time with the findings off and on, and their ratio."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--dispatch", choices=("native", "python"), default="native")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "train.py"
        script.write_text(SCRIPT, encoding="utf-8")
        report = Path(folder) / "findings.json"
        times: dict[str, list[float]] = {
            "off": [],
            "on, every step watched": [],
            "on, default (20 steps)": [],
        }
        for _ in range(args.rounds):
            times["off"].append(_run(script, args.steps, None, args.dispatch))
            times["on, every step watched"].append(_run(script, args.steps, report, args.dispatch, "0"))
            times["on, default (20 steps)"].append(_run(script, args.steps, report, args.dispatch))
    off = statistics.median(times["off"])
    for label, runs in times.items():
        median = statistics.median(runs)
        print(f"dispatch {args.dispatch}, findings {label}: {median * 1e3:.2f} ms/step, {median / off:.2f}x")


if __name__ == "__main__":
    main()
