"""The main job: convert the sample models, then train converted scripts on the simulated NPU.

Step 2 is `ms_fmk_transplt verify` on each chosen script, as a user would run it on their own:
the original on the CPU and the converted copy (the conversion of step 1, reused) on the
simulated NPU, with the same seed and arguments; the loss and every parameter are compared
after each optimizer step, bit for bit. Run from the repository root after tools/setup.sh:

    .venv/bin/python tools/demo.py [--steps N] [--out DIR] [--scripts mnist_mlp/main.py ...]
                                   [--opt-in affinity]

With `--opt-in affinity` the conversion applies the fused-operator rewrites and verify compares
within the tolerance it states for them (exact otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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
    "llama_mini/train.py": [],
}


def _verify(
    script: str, converted: Path, steps: int, seed: int, out: Path, opt_ins: list[str]
) -> tuple[int, dict, str]:
    """`ms_fmk_transplt verify` on one sample, reusing the conversion: exit code, JSON report, output."""
    original = ROOT / "sample_models" / script
    common = ["--steps", str(steps), "--seed", str(seed), *SCRIPTS.get(script, [])]
    ckpt = out / "ckpt" / Path(script).parent
    ckpt.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [
            *(sys.executable, "-m", "ms_fmk_transplt", "verify"),
            *("--converted", str(converted), "-i", str(ROOT / "sample_models")),
            *("--steps", str(steps), "--seed", str(seed), "--report", str(report), "-q"),
            *(arg for name in opt_ins for arg in ("--opt-in", name)),
            *("--", "python", str(original), *common, "--out-dir", str(ckpt)),
        ]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        done = subprocess.run(command, cwd=original.parent, capture_output=True, text=True, env=env)
        document = json.loads(report.read_text()) if report.exists() else {}
    return done.returncode, document, done.stdout + done.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "out")
    parser.add_argument("--scripts", nargs="*", default=list(SCRIPTS))
    parser.add_argument("--opt-in", dest="opt_ins", action="append", default=[], help="e.g. affinity")
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
            *(arg for name in args.opt_ins for arg in ("--opt-in", name)),
        ],
        check=True,
    )
    args.out = args.out.resolve()  # the runs start in each script's folder
    converted = args.out / "sample_models_msft"
    log = (converted / "msFmkTranspltlog.txt").read_text()
    totals = log.split("== totals ==")[-1].strip().replace("\n", ", ")
    print(f"   {totals}")

    print("2. ms_fmk_transplt verify: original on the CPU vs converted on the simulated NPU (same seed)")
    failures = 0
    for script in args.scripts:
        code, report, output = _verify(script, converted, args.steps, args.seed, args.out, args.opt_ins)
        failures += code != 0
        if not report:
            print(
                f"   {script:30s} verify failed (exit {code})\n      "
                + "\n      ".join(output.strip().splitlines()[-8:])
            )
            continue
        cpu, npu = report["cpu"] or {}, report["npu"]
        steps = max(npu["steps"].values(), default=0)
        peaks = [d["allocated"] for devices in report["npu_peak_memory"].values() for d in devices.values()]
        peak = f"{max(peaks) / 2**20:6.2f} MiB" if peaks else "     -    "
        print(
            f"   {script:30s} {steps:3d} steps  cpu {cpu.get('seconds', 0):5.1f}s  npu(sim) {npu['seconds']:5.1f}s"
            f"  peak {peak}  ops flagged {len(report['operator_check'] or [])}  {report['status'].upper()}"
        )
        losses = [step for rank in sorted(npu["losses"]) for step in npu["losses"][rank]][-1:]
        if losses:
            print(f"      last loss(es): {losses[0]}")
        if code != 0 or report["tolerance"]["kind"] != "exact":
            print(f"      {report['message']}")
        for note in report["notes"]:
            print(f"      note: {note}")
    print(
        f"{failures} script(s) differ or failed"
        if failures
        else "done: all converted scripts trained within the stated tolerance (see each message)"
        if args.opt_ins
        else "done: all converted scripts trained identically (losses and every parameter, every step)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
