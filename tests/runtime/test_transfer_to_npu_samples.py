"""The two porting paths agree: each sample model, unmodified under transfer_to_npu, and its copy
converted by ms_fmk_transplt, both on the simulated NPU, give the same losses and final weights.

The DDP sample also runs under torchrun on 2 ranks with its ``nccl`` backend, both ways.
"""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from conftest import ROOT, run_python

from ms_fmk_transplt.run import Options, convert_project
from runtime_shim.patches.transfer_to_npu.device_args import map_backend, map_device

pytestmark = pytest.mark.slow

STEPS = "3"
# (id, script under sample_models/, extra arguments, launched by torchrun on 2 ranks)
SAMPLES = [
    ("mnist_mlp", "mnist_mlp/main.py", [], False),
    ("imagenet_resnet", "imagenet_resnet/main.py", [], False),
    ("word_language_model", "word_language_model/main.py", ["--cuda"], False),
    ("nanogpt_amp", "nanogpt_amp/train.py", ["--eval-interval", "2"], False),
    ("ddp_trainer", "ddp_trainer/train_ddp.py", ["--world-size", "2"], False),
    ("inhouse_ctr", "inhouse_ctr/train.py", [], False),
    ("ddp_trainer_torchrun", "ddp_trainer/train_ddp.py", [], True),
]
ENV = {"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Path:
    run = convert_project(Options(source=ROOT / "sample_models", output=tmp_path_factory.mktemp("conv")))
    assert not run.failed
    return Path(run.output_root)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _command(script: Path, extra: list[str], out: Path, torchrun: bool, transfer: bool) -> list[str]:
    shim = ["-m", "runtime_shim", *(["--transfer-to-npu"] if transfer else [])]
    launcher = ["-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(_free_port())]
    return [
        *(launcher if torchrun else []),
        *shim,
        str(script),
        "--steps",
        STEPS,
        "--seed",
        "3",
        "--out-dir",
        str(out),
        *extra,
    ]


@pytest.fixture(scope="module")
def runs(converted, tmp_path_factory):
    """Every sample both ways, two runs at a time."""
    jobs = {}
    for name, rel, extra, torchrun in SAMPLES:
        for way, script in (("transfer", ROOT / "sample_models" / rel), ("converted", converted / rel)):
            out = tmp_path_factory.mktemp(f"{name}_{way}")
            jobs[(name, way)] = (_command(script, extra, out, torchrun, way == "transfer"), out, ENV)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            key: pool.submit(run_python, cmd, env_extra=env, cwd=out, timeout=300)
            for key, (cmd, out, env) in jobs.items()
        }
        return {key: (futures[key].result(), jobs[key][1]) for key in jobs}


def _steps(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("step=")]


def _same(a, b, a_dir: str, b_dir: str, where: str) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), where
        assert (a.dtype, a.device, a.shape) == (b.dtype, b.device, b.shape), where
        assert torch.equal(a.cpu(), b.cpu()), where
    elif isinstance(a, torch.nn.Module):
        _same(a.state_dict(), b.state_dict(), a_dir, b_dir, where)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], a_dir, b_dir, f"{where}/{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, a_dir, b_dir, f"{where}/{i}")
    elif isinstance(a, str):
        # The one named difference: a device or backend the script records as a value (nanoGPT's
        # config "device": "cuda") stays as written under transfer_to_npu; the converted copy says npu.
        assert map_backend(map_device(a.replace(a_dir, "<out>"))) == b.replace(b_dir, "<out>"), where
    else:
        assert a == b, where


def _compare_checkpoints(a_dir: Path, b_dir: Path) -> list[str]:
    names = sorted(p.name for p in a_dir.iterdir() if p.suffix in (".pt", ".tar"))
    assert names == sorted(p.name for p in b_dir.iterdir() if p.suffix in (".pt", ".tar"))
    for name in names:
        a, b = a_dir / name, b_dir / name
        if a.read_bytes() != b.read_bytes():
            # A checkpoint may record its own folder (a config dict): compare what it holds.
            _same(
                torch.load(a, weights_only=False),
                torch.load(b, weights_only=False),
                str(a_dir),
                str(b_dir),
                name,
            )
    return names


@pytest.mark.parametrize("name", [s[0] for s in SAMPLES])
def test_transfer_to_npu_equals_converted_copy(runs, name):
    (transfer, t_out), (conv, c_out) = runs[(name, "transfer")], runs[(name, "converted")]
    assert transfer.returncode == 0, transfer.stderr[-3000:]
    assert conv.returncode == 0, conv.stderr[-3000:]
    steps = _steps(transfer.stdout)
    assert len(steps) == int(STEPS), transfer.stdout
    assert steps == _steps(conv.stdout)
    names = _compare_checkpoints(t_out, c_out)
    if name not in ("nanogpt_amp",):
        assert names, f"{name} saved no checkpoint to compare"


def test_transfer_to_npu_really_ran_on_the_npu(runs):
    # The DDP sample prints its backend: nccl became hccl on both launchers.
    for name in ("ddp_trainer", "ddp_trainer_torchrun"):
        proc, _ = runs[(name, "transfer")]
        assert "backend=hccl" in proc.stdout, proc.stdout


def test_launcher_environment_and_the_import_in_the_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\nprint(torch.ones(1).cuda().device, torch.cuda.is_available())\n")
    proc = run_python(["-m", "runtime_shim", "--transfer-to-npu", str(script)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "npu:0 True"
    proc = run_python(["-m", "runtime_shim", str(script)], env_extra={"TORCH_TRANSFER_TO_NPU": "1"})
    assert proc.stdout.strip() == "npu:0 True", proc.stderr
    edited = tmp_path / "edited.py"
    edited.write_text(
        "import torch_npu\nfrom torch_npu.contrib import transfer_to_npu\n" + script.read_text()
    )
    proc = run_python(["-m", "runtime_shim", str(edited)])
    assert proc.stdout.strip() == "npu:0 True", proc.stderr
    proc = run_python(["-m", "runtime_shim", str(script)], env_extra={"TORCH_TRANSFER_TO_NPU": "yes"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == "runtime_shim: TORCH_TRANSFER_TO_NPU must be 0 or 1, not 'yes'"
