"""The main job: convert the sample models, then train converted scripts on the simulated NPU.

Each chosen script runs twice with the same seed: the original on the CPU, the converted copy
under `python -m runtime_shim` (a simulated Ascend NPU). Their per-step losses must be
bit-identical. Run from the repository root after tools/setup.sh:

    .venv/bin/python tools/demo.py [--steps N] [--out DIR] [--scripts mnist_mlp/main.py ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# script -> extra arguments that make the original take its device path where it has a flag for it
SCRIPTS = {
    "mnist_mlp/main.py": [],
    "imagenet_resnet/main.py": [],
    "word_language_model/main.py": ["--cuda"],
    # the script picks fused AdamW and low precision on a GPU only: pin both so CPU and NPU match
    "nanogpt_amp/train.py": ["--dtype", "float32", "--fused", "yes"],
    "inhouse_ctr/train.py": [],
    "ddp_trainer/train_ddp.py": [],
}


def _steps(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("step=")]


# stock torch's gloo now and then aborts while a process tears its groups down on a loaded machine
TEARDOWN_ABORT = "terminate called without an active exception"


def _run(command: list[str], cwd: Path, reference: bool = False) -> tuple[list[str], float, str]:
    """The step lines a run printed; a failed run gives none, except a CPU reference (`reference`)
    that printed every step and then hit stock torch's teardown abort: its losses are complete."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0 and not (reference and TEARDOWN_ABORT in done.stderr):
        return [], seconds, f"exit {done.returncode}: {' '.join(command)}\n{done.stderr[-2500:]}"
    return _steps(done.stdout), seconds, done.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "out")
    parser.add_argument("--scripts", nargs="*", default=list(SCRIPTS))
    args = parser.parse_args()

    python = sys.executable
    print(f"1. converting sample_models -> {args.out}/sample_models_msft")
    subprocess.run(
        [
            python,
            "-m",
            "ms_fmk_transplt",
            "-i",
            str(ROOT / "sample_models"),
            "-o",
            str(args.out),
            "--force",
            "-q",
        ],
        check=True,
    )
    converted = args.out / "sample_models_msft"
    log = (converted / "msFmkTranspltlog.txt").read_text()
    totals = log.split("== totals ==")[-1].strip().replace("\n", ", ")
    print(f"   {totals}")

    print("2. training: original on CPU vs converted on the simulated NPU (same seed)")
    failures = 0
    for script in args.scripts:
        extra = SCRIPTS.get(script, [])
        common = ["--steps", str(args.steps), "--seed", str(args.seed), *extra]
        original = ROOT / "sample_models" / script
        port = converted / script
        cpu, cpu_s, cpu_stderr = _run(
            [python, str(original), *common, "--out-dir", str(args.out / "ckpt_cpu")],
            original.parent,
            reference=True,
        )
        npu, npu_s, stderr = _run(
            [python, "-m", "runtime_shim", str(port), *common, "--out-dir", str(args.out / "ckpt_npu")],
            port.parent,
        )
        same = cpu == npu and len(cpu) == args.steps
        failures += not same
        verdict = "bit-identical" if same else "DIFFERENT"
        print(
            f"   {script:30s} {len(npu):3d} steps  cpu {cpu_s:5.1f}s  npu(sim) {npu_s:5.1f}s  losses {verdict}"
        )
        if cpu:
            print(f"      last: {cpu[-1]}  |  {npu[-1] if npu else '(none)'}")
        if TEARDOWN_ABORT in cpu_stderr:
            print("      (the CPU reference's stock gloo aborted at teardown, after its last step)")
        if not same:
            for a, b in zip(cpu, npu):
                if a != b:
                    print(f"      first difference: {a}  vs  {b}")
                    break
            print("      " + "\n      ".join(stderr.strip().splitlines()[-5:]))
    print(
        "done: all converted scripts trained identically" if not failures else f"{failures} script(s) differ"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
