"""`ms_fmk_transplt distributed` end to end: a single-device script, converted, trained by torchrun.

- 2 ranks on the simulated NPU (hccl) == the same distributed script's 2 ranks on the CPU (gloo),
  bit for bit: every printed loss and the saved weights.
- 2 ranks of batch B/2 == the original's one process of batch B, to TOLERANCE (the gradient is
  summed in another order; docs/distributed.md derives the bound), and the converted script
  started without torchrun == the original, bit for bit.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ms_fmk_transplt.distributed import distribute_source
from ms_fmk_transplt.distributed.stage import DistributedStage
from ms_fmk_transplt.run import Options, convert_project

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "data" / "distributed" / "train_single.py"
# |distributed - original| <= ATOL + RTOL * |original|, weights and test losses after 8 steps of SGD
# (lr 0.05, momentum 0.9): each gradient sums 16 per-sample terms, in one reduction or as 8 + 8
# averaged across ranks, so it may differ by ~16 float32 roundings (16 * 6e-8 ~ 1e-6) of its size
# (~1); through momentum (<= 10x) and lr over 8 steps: <= 0.05 * 10 * 8 * 1e-6 ~ 4e-6 (docs/distributed.md)
RTOL, ATOL = 1e-5, 5e-6


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(folder: Path, args: list[str], torchrun: bool, shim: bool, script: str = "train.py") -> list[str]:
    # a port free when picked can be taken by another test's launcher before torchrun binds it
    # (EADDRINUSE): one more try with a new port
    try:
        return _run_once(folder, args, torchrun, shim, script)
    except AssertionError as error:
        if not torchrun or "EADDRINUSE" not in str(error):
            raise
    return _run_once(folder, args, torchrun, shim, script)


def _run_once(folder: Path, args: list[str], torchrun: bool, shim: bool, script: str) -> list[str]:
    command = [sys.executable]
    if torchrun:
        command += ["-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1"]
        command += ["--master-port", str(_port())]
    command += [*(["-m", "runtime_shim"] if shim else []), script, *args]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RUNTIME_SHIM", "LOCAL_RANK", "RANK", "WORLD_SIZE"))
    }
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", RUNTIME_SHIM_OPCHECK="off")
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.fixture(scope="module")
def versions(tmp_path_factory) -> dict[str, Path]:
    """The original, the distributed script in CUDA terms (runs on the CPU) and the converted one."""
    base = tmp_path_factory.mktemp("distributed")
    original = base / "original"
    original.mkdir()
    shutil.copy(SCRIPT, original / "train.py")
    cpu = base / "cpu"
    cpu.mkdir()
    distributed = distribute_source(SCRIPT.read_text(), "train.py")
    assert distributed.output is not None
    (cpu / "train.py").write_text(distributed.output)
    stage = DistributedStage(original, Path("train.py"), None)
    try:
        run = convert_project(
            Options(source=original, output=base, use_cache=False, suffix=stage.suffix), stage=stage
        )
    finally:
        stage.close()
    return {"original": original, "cpu": cpu, "npu": Path(run.output_root)}


def _weights(path: Path) -> dict:
    return torch.load(path, weights_only=True)


def test_two_npu_ranks_equal_two_gloo_ranks_on_the_cpu_bit_for_bit(versions) -> None:
    args = ["--batch-size", "8", "--epochs", "2"]  # shuffled: DistributedSampler + set_epoch on both
    cpu = _run(versions["cpu"], args, torchrun=True, shim=False)
    npu = _run(versions["npu"], args, torchrun=True, shim=True)
    assert len(npu) == 2 * (4 + 1)  # rank 0 alone prints: 64 samples / 2 ranks / 8 = 4 steps an epoch
    assert npu == cpu
    cpu_weights, npu_weights = (
        _weights(versions["cpu"] / "weights.pt"),
        _weights(versions["npu"] / "weights.pt"),
    )
    assert list(npu_weights) == ["0.weight", "0.bias", "2.weight", "2.bias"]  # saved from model.module
    assert all(torch.equal(npu_weights[k], cpu_weights[k]) for k in cpu_weights)


def test_two_ranks_match_the_single_process_original_with_the_same_global_batch(versions) -> None:
    original = _run(versions["original"], ["--batch-size", "16", "--no-shuffle"], torchrun=False, shim=False)
    alone = _run(versions["npu"], ["--batch-size", "16", "--no-shuffle", "--save", "alone.pt"], False, True)
    assert alone == original  # without torchrun the converted script is the original on the npu
    npu = _run(
        versions["npu"], ["--batch-size", "8", "--no-shuffle", "--save", "two.pt"], torchrun=True, shim=True
    )
    single, two = _weights(versions["original"] / "weights.pt"), _weights(versions["npu"] / "two.pt")
    assert torch.equal(_weights(versions["npu"] / "alone.pt")["0.weight"], single["0.weight"])
    for name, value in single.items():
        torch.testing.assert_close(two[name], value, rtol=RTOL, atol=ATOL)
    tests = [(a, b) for a, b in zip(original, npu) if "test=" in a]
    assert len(tests) == 2
    for a, b in tests:
        assert b.split("=")[0] == a.split("=")[0]
        expected, got = float(a.rsplit("=", 1)[1]), float(b.rsplit("=", 1)[1])
        assert abs(got - expected) <= ATOL + RTOL * abs(expected)


def test_a_checkpoint_in_a_temporary_folder_is_loaded_by_every_rank(tmp_path: Path) -> None:
    """mnist_mlp saves into `tempfile.mkdtemp()` and loads it back: rank 0 makes the folder and
    every rank gets its name, so the ranks waiting at the barrier find the file rank 0 saved."""
    sample = ROOT / "sample_models" / "mnist_mlp"
    stage = DistributedStage(sample, Path("main.py"), None)
    try:
        run = convert_project(
            Options(source=sample, output=tmp_path, use_cache=False, suffix=stage.suffix), stage=stage
        )
    finally:
        stage.close()
    converted = Path(run.output_root)
    assert "msft_on_rank_zero(tempfile.mkdtemp, " in (converted / "main.py").read_text()
    lines = _run(
        converted, ["--steps", "4", "--num-train", "128"], torchrun=True, shim=True, script="main.py"
    )
    reloaded = [line for line in lines if line.startswith("reloaded checkpoint from ")]
    assert len(reloaded) == 1  # printed by rank 0; rank 1 loaded the same file or the run failed
    folder = Path(reloaded[0].removeprefix("reloaded checkpoint from ")).parent
    assert folder.name.startswith("mnist_mlp_") and (folder / "mnist_cnn.pt").is_file()
    shutil.rmtree(folder)


def test_a_whole_model_rank_zero_saved_is_loaded_onto_each_ranks_device(tmp_path: Path) -> None:
    """word_language_model saves the model whole and loads it back: rank 1 loads it onto npu:1,
    not onto npu:0 where rank 0 saved it (which failed its forward on two devices)."""
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(ROOT / "tests" / "data" / "distributed" / "save_whole_model.py", source / "train.py")
    stage = DistributedStage(source, Path("train.py"), None)
    try:
        run = convert_project(
            Options(source=source, output=tmp_path, use_cache=False, suffix=stage.suffix), stage=stage
        )
    finally:
        stage.close()
    converted = Path(run.output_root)
    assert "map_location=" in (converted / "train.py").read_text()
    _run(converted, [], torchrun=True, shim=True)
    lines = [(converted / f"loaded.{rank}.txt").read_text() for rank in (0, 1)]
    assert [line.split(" test=")[0] for line in lines] == ["loaded on npu:0", "loaded on npu:1"]
    assert len({line.split(" test=")[1] for line in lines}) == 1  # the same model on both ranks
