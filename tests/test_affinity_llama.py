"""The Llama-style sample converted with `--opt-in affinity`: its attention, RMSNorm, rotary embedding
and SwiGLU run through the torch_npu stand-in's fused operators, and it trains on the simulated NPU within the tolerance
verify holds such a run to (verify/step_records.py's AFFINITY) of the original on the CPU."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import convert_text, run_verify

from ms_fmk_transplt.ruleset import compile_rules, load_rules
from ms_fmk_transplt.verify.step_records import AFFINITY, HALF_PRECISION

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "sample_models" / "llama_mini" / "train.py"
STEP = re.compile(r"^step=(\d+) loss=(\S+)$", re.MULTILINE)
# runs the converted script on the simulated NPU, counting the fused operators it calls
DRIVER = """
import runpy, sys
import runtime_shim
runtime_shim.activate()
import torch_npu
counts = {}
def counted(name):
    fused = getattr(torch_npu, name)
    def call(*args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        return fused(*args, **kwargs)
    return call
for name in ("npu_fusion_attention", "npu_rms_norm", "npu_rotary_mul", "npu_swiglu"):
    setattr(torch_npu, name, counted(name))
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
print("fused calls:", sorted(counts.items()))
"""


def _run(args: list[str], cwd: Path) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "RUNTIME_SHIM_OPCHECK": "off"}
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, text=True, capture_output=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_llama_mini_with_affinity_runs_fused_operators_within_the_tolerance(tmp_path: Path) -> None:
    tables = compile_rules(load_rules(), opt_ins=["affinity"])
    converted, result = convert_text(SCRIPT.read_text(), tables, "train.py")
    rewritten = {f.rule_id for f in result.findings}
    assert {"TP954", "TP955", "TP956", "TP957"} <= rewritten
    (tmp_path / "train.py").write_text(converted)
    (tmp_path / "driver.py").write_text(DRIVER)
    steps = ["--steps", "3", "--seed", "1", "--out-dir", str(tmp_path / "out")]
    original = _run([str(SCRIPT), *steps, "--no-cuda"], tmp_path)
    on_npu = _run([str(tmp_path / "driver.py"), str(tmp_path / "train.py"), *steps], tmp_path)
    # per forward: 2 attentions, 2 layers x 2 norms + the final norm, q and k rotated in 2 layers,
    # 2 MLPs; 3 forwards
    calls = "[('npu_fusion_attention', 6), ('npu_rms_norm', 15), ('npu_rotary_mul', 12), ('npu_swiglu', 6)]"
    assert f"fused calls: {calls}" in on_npu
    expected = [float(loss) for _, loss in STEP.findall(original)]
    got = [float(loss) for _, loss in STEP.findall(on_npu)]
    assert len(expected) == len(got) == 3
    assert all(math.isclose(a, b, rel_tol=AFFINITY.relative) for a, b in zip(expected, got)), (expected, got)


def test_verify_holds_llama_mini_under_bfloat16_autocast_to_bfloat16_rounding(tmp_path: Path) -> None:
    """--bf16: the original's attention rounds its scores to bfloat16 where the fused one does not
    (1.8e-5 relative at step 1, over float32's 1e-5); verify sees the bfloat16 autocast in the step
    records and holds the run to bfloat16's unit roundoff, and says so."""
    done, document = run_verify(
        ["--opt-in", "affinity", "--steps", "3"],
        ["python", str(SCRIPT), "--steps", "3", "--seed", "1", "--out-dir", str(tmp_path / "out"), "--bf16"],
        tmp_path,
        tmp_path / "verify.json",
        600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert document["tolerance"]["relative"] == HALF_PRECISION["bfloat16"] == 2**-8, document["tolerance"]
    assert "bfloat16" in document["tolerance"]["why"]
