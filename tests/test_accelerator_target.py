"""`--target accelerator`: the release gate, the default target untouched, and verify of the
portable copies (that each sample's copy trains as the original on the CPU is checked in
test_sample_models.py, on the same runs of the originals)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_sample_models import _env

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


def test_the_cpu_run_of_the_portable_copy_decides_when_the_npu_run_was_identical() -> None:
    from ms_fmk_transplt.verify.verdict import Verdict, VerifyStatus, with_portable_cpu

    same = Verdict(VerifyStatus.IDENTICAL, "identical: 2 step(s)")
    differs = Verdict(VerifyStatus.DIFFERENT, "different at step 1")
    assert with_portable_cpu(same, same).status is VerifyStatus.IDENTICAL
    assert with_portable_cpu(same, same).notes == ("the converted script on the CPU: identical: 2 step(s)",)
    joined = with_portable_cpu(same, differs)
    assert (joined.status, joined.message) == (
        VerifyStatus.DIFFERENT,
        "the converted script on the CPU: different at step 1",
    )
    assert with_portable_cpu(differs, same).status is VerifyStatus.DIFFERENT


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


def _invoke(args: list[str]):
    done = CliRunner().invoke(app, args)
    return done.exit_code, done.output


@pytest.mark.parametrize("command", ["analyse", "explain", "distributed"])
def test_every_command_refuses_the_target_for_an_old_release_in_one_line(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "t.py").write_text(CUDA_SCRIPT)
    script, out = str(tmp_path / "t.py"), str(tmp_path / "out")
    args = {
        "analyse": ["analyse", script, "-o", out, "--target", "accelerator", "-v", "2.1.0"],
        "explain": ["explain", script, "--target", "accelerator", "-v", "2.1.0"],
        "distributed": ["-i", script, "-o", out, "--target", "accelerator", "-v", "2.1.0", "distributed"],
    }[command]
    code, output = _invoke(args)
    assert (code, output.strip().splitlines()) == (
        2,
        [
            "error: --target accelerator needs PyTorch 2.7 or later (torch.accelerator.set_device_index,"
            " current_accelerator(check_available=True)); -v 2.1.0 is older"
        ],
    )
    assert not (tmp_path / "out").exists()


def test_analyse_with_the_target_reports_the_accelerator_rules(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(CUDA_SCRIPT + "amp = torch.cuda.amp\n")
    found = {}
    for target in ("npu", "accelerator"):
        out = tmp_path / target
        code, output = _invoke(
            ["analyse", str(tmp_path / "t.py"), "-o", str(out), "-q", "--no-cache", "--target", target]
        )
        assert code == 0, output
        document = json.loads((out / "report.json").read_text())
        found[target] = [
            (f["start_line"], f["rule"], f["operation"]) for f in document["files"][0]["findings"]
        ]
        assert sorted(p.name for p in out.iterdir()) == [
            "report.json",
            "unsupported_op.xlsx",
        ]  # nothing converted
    assert found["accelerator"] == [
        (2, "TA101", "MODIFY"),
        (3, "TA105", "MODIFY"),
        (4, "TA201", "MODIFY"),
        (5, "TA207", "UNSUPPORTED"),
    ]
    assert found["npu"] and not [rule for _, rule, _ in found["npu"] if rule.startswith("TA")]


def test_explain_with_the_target_explains_the_accelerator_rules(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(CUDA_SCRIPT)
    code, portable = _invoke(["explain", f"{tmp_path / 't.py'}:3", "--target", "accelerator"])
    assert code == 0, portable
    assert portable.splitlines()[-2:] == [
        "rewrites and reports (rule):",
        "  3:5  TA105 MODIFY  torch.cuda.synchronize -> (torch.accelerator.synchronize()"
        " if torch.accelerator.is_available() else None)",
    ]
    code, before_the_command = _invoke(["--target", "accelerator", "explain", f"{tmp_path / 't.py'}:3"])
    assert (code, before_the_command) == (0, portable)
    code, npu = _invoke(["explain", f"{tmp_path / 't.py'}:3"])
    assert code == 0 and "TA105" not in npu and "torch.npu.synchronize" in npu


def test_distributed_with_the_target_writes_device_agnostic_code(tmp_path: Path) -> None:
    outputs = {}
    for target in ("npu", "accelerator"):
        out = tmp_path / target
        args = ["-i", str(ROOT / "sample_models" / "mnist_mlp"), "-o", str(out), "-q", "--no-cache"]
        code, output = _invoke([*args, "--target", target, "distributed", "-m", "main.py"])
        assert code == 0, output
        (folder,) = out.iterdir()
        outputs[target] = (folder / "main.py").read_text()
    assert "torch_npu" in outputs["npu"] and "torch_npu" not in outputs["accelerator"]
    assert "torch.accelerator.set_device_index(LOCAL_RANK)" in outputs["accelerator"]
    assert "torch.nn.parallel.DistributedDataParallel(model)" in outputs["accelerator"]
    code_lines = [line for line in outputs["accelerator"].splitlines() if not line.startswith("#")]
    assert not [line for line in code_lines if "torch.cuda" in line]


def test_code_already_device_agnostic_comes_out_byte_identical_and_unreported(tmp_path: Path) -> None:
    """Four files in pytorch/examples' style at its head (torch.accelerator, torch.amp with the
    device's type, the device's default backend, torch.Event, map_location=device), converted as a
    project: every byte kept, no finding."""
    source = ROOT / "tests" / "fixtures" / "rules" / "accel_agnostic@accelerator"
    project = tmp_path / "agnostic"
    project.mkdir()
    for case in sorted(source.glob("*.in.py")):
        (project / case.name.replace(".in.py", ".py")).write_bytes(case.read_bytes())
    result = convert_project(Options(source=project, output=tmp_path, target="accelerator", use_cache=False))
    converted = Path(result.output_root)
    assert len(result.files) == 4
    for file in result.files:
        assert (converted / file.path).read_bytes() == (project / file.path).read_bytes(), file.path
        assert file.findings == (), file.path
