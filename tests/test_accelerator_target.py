"""`--target accelerator`: the release gate, the default target untouched, and the six sample models
converted to device-agnostic code training exactly as the originals do on the CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_sample_models import SCRIPTS, _env

from ms_fmk_transplt.cli import app
from ms_fmk_transplt.run import Options, convert_project

ROOT = Path(__file__).resolve().parents[1]
CUDA_SCRIPT = (
    "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\nx = torch.zeros(1).cuda()\n"
)


@pytest.mark.parametrize("release", ["2.1.0", "2.6.0"])
def test_a_release_before_2_7_refuses_the_target_in_one_line(tmp_path: Path, release: str) -> None:
    (tmp_path / "t.py").write_text(CUDA_SCRIPT)
    done = CliRunner().invoke(
        app,
        ["-i", str(tmp_path / "t.py"), "-o", str(tmp_path / "out"), "--target", "accelerator", "-v", release],
    )
    assert done.exit_code == 2
    assert done.output.strip().splitlines() == [
        f"error: --target accelerator needs PyTorch 2.7 or later (torch.accelerator.set_device_index,"
        f" current_accelerator(check_available=True)); -v {release} is older"
    ]
    assert not (tmp_path / "out").exists()


def test_the_default_target_is_npu_and_the_two_differ(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(CUDA_SCRIPT)
    outputs = {}
    for target in ("", "npu", "accelerator"):
        out = tmp_path / (target or "default")
        extra = ["--target", target] if target else []
        done = CliRunner().invoke(
            app, ["-i", str(tmp_path / "t.py"), "-o", str(out), "-q", "--no-cache", *extra]
        )
        assert done.exit_code == 0, done.output
        outputs[target] = (out / "t_msft" / "t.py").read_text()
    assert outputs[""] == outputs["npu"]
    assert "torch_npu" in outputs["npu"] and "torch_npu" not in outputs["accelerator"]
    assert outputs["accelerator"] == (  # the guard the code already has is not written again
        "import torch\nif torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"
        'x = torch.zeros(1).to(device=torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu"))\n'
    )


def _steps(script: Path, extra: list[str], out_dir: Path) -> list[str]:
    out_dir.mkdir()
    cmd = [sys.executable, str(script), "--steps", "2", "--seed", "3", "--out-dir", str(out_dir), *extra]
    done = subprocess.run(cmd, cwd=out_dir, env=_env(), text=True, capture_output=True, timeout=300)
    assert done.returncode == 0, f"{script}: {done.stderr[-3000:]}"
    return [line for line in done.stdout.splitlines() if line.startswith("step=")]


@pytest.mark.slow
def test_every_sample_converted_for_any_accelerator_trains_as_the_original_on_the_cpu(tmp_path: Path) -> None:
    """Two steps of each sample, the original and its --target accelerator copy, one at a time."""
    result = convert_project(
        Options(source=ROOT / "sample_models", output=tmp_path, target="accelerator", use_cache=False)
    )
    converted = Path(result.output_root)
    for name, rel, extra in SCRIPTS:
        original = _steps(ROOT / "sample_models" / rel, extra, tmp_path.joinpath(f"{name}_a").resolve())
        portable = _steps(converted / rel, extra, tmp_path.joinpath(f"{name}_b").resolve())
        assert len(original) == 2 and portable == original, name


def test_the_cpu_run_of_the_portable_copy_decides_when_the_npu_run_was_identical() -> None:
    from ms_fmk_transplt.verify.verdict import Status, Verdict, with_portable_cpu

    same = Verdict(Status.IDENTICAL, "identical: 2 step(s)")
    differs = Verdict(Status.DIFFERENT, "different at step 1")
    assert with_portable_cpu(same, same).status is Status.IDENTICAL
    assert with_portable_cpu(same, same).notes == ("the converted script on the CPU: identical: 2 step(s)",)
    joined = with_portable_cpu(same, differs)
    assert (joined.status, joined.message) == (
        Status.DIFFERENT,
        "the converted script on the CPU: different at step 1",
    )
    assert with_portable_cpu(differs, same).status is Status.DIFFERENT


@pytest.mark.slow
def test_verify_runs_the_portable_copy_on_the_npu_and_on_the_cpu(tmp_path: Path) -> None:
    from helpers import run_verify

    done, document = run_verify(
        ["--target", "accelerator", "--steps", "2"],
        ["python", "main.py"],
        ROOT / "sample_models" / "mnist_mlp",
        tmp_path / "report.json",
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "running the converted script on the CPU" in done.stderr
    assert document["notes"][-1] == (
        "the converted script on the CPU: identical: 2 step(s), losses and every parameter bit for bit"
    )


def test_the_result_cache_keeps_the_targets_apart(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(CUDA_SCRIPT)
    cache = tmp_path / "cache"
    texts = []
    for target in ("npu", "accelerator", "npu"):
        out = tmp_path / f"out_{len(texts)}"
        args = [
            "-i",
            str(tmp_path / "t.py"),
            "-o",
            str(out),
            "-q",
            "--cache-dir",
            str(cache),
            "--target",
            target,
        ]
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 0, done.output
        texts.append((out / "t_msft" / "t.py").read_text())
    assert texts[0] == texts[2] != texts[1]
    assert "torch.accelerator" in texts[1]


def test_cuda_autocast_and_grad_scaler_stay_off_on_the_cpu_as_the_originals_did() -> None:
    """torch.autocast("cuda"), torch.cuda.amp.autocast(True), GradScaler("cuda") and CUDA's old
    GradScaler do nothing on a machine without CUDA: the portable copy, run on the CPU, must
    train and scale exactly as the original does there (the CPU's own autocast would not)."""
    folder = ROOT / "tests" / "fixtures" / "rules" / "accel_amp@accelerator"
    env = {**_env(), "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    runs = [
        subprocess.Popen(
            [sys.executable, "-W", "ignore", name], cwd=folder, env=env, text=True, stdout=subprocess.PIPE
        )
        for name in ("amp_training.in.py", "amp_training.out.py")
    ]
    original, portable = (run.communicate(timeout=300)[0] for run in runs)
    assert [run.returncode for run in runs] == [0, 0]
    assert original.count("step=") == 3 and "scale=1.0" in original
    assert portable == original
