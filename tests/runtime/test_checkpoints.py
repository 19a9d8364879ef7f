"""Checkpoints across devices on the simulated NPU, as on torch_npu.

torch_npu's `torch.load` (torch_npu/utils/serialization.py) hands `map_location` and every
storage's location tag to torch's own deserializers: a `cuda` tag reaches torch's CUDA restore,
which refuses it when `torch.cuda.is_available()` is False, as it is on an NPU machine (only the
opt-in transfer_to_npu patches that). The simulated NPU takes the same path, so a CUDA-tagged
checkpoint fails or loads here exactly as there; these tests hold it to that, and run converted
scripts against checkpoints tagged `cuda:0` (made without a GPU, cuda_checkpoints.py) and
checkpoints saved on the simulated NPU.
"""

from __future__ import annotations

import json
import re
import socket
import zipfile
from pathlib import Path

import pytest
import torch
from conftest import HERE, run_python
from cuda_checkpoints import retag, save_as_cuda

CUDA_REFUSED = re.escape(
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False"
)
SCRIPTS = HERE / "scripts"


def _state() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return torch.nn.Linear(4, 2).state_dict()


def _tags(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as archive:
        data = b"".join(archive.read(n) for n in archive.namelist() if n.endswith(".pkl"))
    return {tag for tag in ("cpu", "cuda:0", "npu:0", "npu:1") if tag.encode() in data}


@pytest.fixture
def cuda_file(tmp_path: Path) -> Path:
    path = tmp_path / "gpu_trained.pt"
    save_as_cuda(_state(), path)
    return path


def test_a_retagged_checkpoint_is_a_cuda_checkpoint(cuda_file: Path) -> None:
    assert _tags(cuda_file) == {"cuda:0"}
    with pytest.raises(RuntimeError, match=CUDA_REFUSED):
        torch.load(cuda_file)
    loaded = torch.load(cuda_file, map_location="cpu")
    assert all(torch.equal(loaded[k], v) for k, v in _state().items())


def test_retag_refuses_an_archive_without_the_tag(cuda_file: Path) -> None:
    with pytest.raises(ValueError, match="no storage tagged 'cpu'"):
        retag(cuda_file)


@pytest.mark.parametrize(
    "map_location",
    [None, {"npu:0": "npu:0"}, {"npu:0": "npu:1"}],
    ids=["none", "npu_key_only", "npu_key_to_npu1"],
)
def test_cuda_tags_are_refused_unless_mapped(cuda_file: Path, map_location) -> None:
    """What the old conversion produced ({'npu:0': ...} keys) fails on CUDA checkpoints, as on torch_npu."""
    with pytest.raises(RuntimeError, match=CUDA_REFUSED):
        torch.load(cuda_file, map_location=map_location)


@pytest.mark.parametrize(
    "map_location,device",
    [
        ("npu", "npu:0"),
        ("npu:1", "npu:1"),
        (torch.device("npu", 1), "npu:1"),
        ({"cuda:0": "npu:1"}, "npu:1"),
        ({"cuda:0": "npu:1", "npu:0": "npu:1"}, "npu:1"),
        ({"cuda:0": "cpu", "npu:0": "cpu"}, "cpu"),
        (lambda storage, loc: storage.npu(1), "npu:1"),
        ("cpu", "cpu"),
    ],
    ids=["npu", "npu1", "device", "dict", "dict_both_keys", "dict_cpu", "storage_npu", "cpu"],
)
def test_converted_map_locations_load_cuda_checkpoints(cuda_file: Path, map_location, device: str) -> None:
    loaded = torch.load(cuda_file, map_location=map_location)
    for key, value in _state().items():
        assert str(loaded[key].device) == device
        assert torch.equal(loaded[key].cpu(), value)


def test_npu_checkpoints_are_tagged_npu_and_load_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "npu_trained.pt"
    torch.save({k: v.to("npu:1") for k, v in _state().items()}, path)
    assert _tags(path) == {"npu:1"}
    assert {str(v.device) for v in torch.load(path).values()} == {"npu:1"}
    for map_location, device in (("cpu", "cpu"), ({"cuda:1": "npu:0", "npu:1": "npu:0"}, "npu:0")):
        loaded = torch.load(path, map_location=map_location)
        assert {str(v.device) for v in loaded.values()} == {device}
        assert all(torch.equal(loaded[k].cpu(), v) for k, v in _state().items())


def test_torchscript_saved_on_cuda_needs_map_location(tmp_path: Path) -> None:
    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(4, 2)), path)
    retag(path)
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.jit.load(path)
    module = torch.jit.load(path, map_location="npu:1")
    assert module.weight.device == torch.device("npu", 1)


@pytest.mark.slow
def test_npu_checkpoint_loads_with_stock_torch_on_the_cpu(tmp_path: Path) -> None:
    """A checkpoint the port saves on the NPU opens on a machine without torch_npu, given map_location='cpu'."""
    path = tmp_path / "npu_trained.pt"
    torch.save({k: v.to("npu:0") for k, v in _state().items()}, path)
    code = (
        "import sys, torch\n"
        "state = torch.load(sys.argv[1], map_location='cpu')\n"
        "print(sorted({str(v.device) for v in state.values()}), sum(v.sum().item() for v in state.values()))\n"
        "try:\n"
        "    torch.load(sys.argv[1])\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
    )
    proc = run_python(["-c", code, str(path)])  # no runtime_shim: stock torch, no npu device
    assert proc.returncode == 0, proc.stderr
    first, refused = proc.stdout.splitlines()[:2]
    assert first.split()[0] == "['cpu']"
    assert float(first.split()[1]) == pytest.approx(sum(v.sum().item() for v in _state().values()))
    assert "tagged with npu:0" in refused  # without map_location stock torch cannot place an npu tag


def _convert(script: Path, tables, out_dir: Path) -> Path:
    from ms_fmk_transplt.engine.conversion import convert_source

    result = convert_source(script.name, script.read_bytes(), tables)
    assert result.output is not None, result.reason
    converted = out_dir / script.name
    converted.write_bytes(result.output)
    return converted


@pytest.mark.slow
def test_converted_loaders_load_cuda_and_npu_checkpoints(tmp_path: Path, builtin_tables) -> None:
    """Each map_location form, converted, loads a cuda:0 checkpoint and an NPU one onto the NPU."""
    converted = _convert(SCRIPTS / "checkpoint_forms.py", builtin_tables, tmp_path)
    text = converted.read_text()
    assert '{"cuda:0": "npu:%d" % rank, "npu:0": "npu:%d" % rank}' in text
    scripted = tmp_path / "scripted.pt"
    torch.manual_seed(0)
    linear = torch.nn.Linear(4, 2)
    torch.jit.save(torch.jit.script(linear), scripted)
    retag(scripted)
    expected = linear.weight.sum().item()
    files = {"cuda": tmp_path / "gpu_trained.pt", "npu": tmp_path / "npu_trained.pt"}
    save_as_cuda(linear.state_dict(), files["cuda"])
    torch.save({k: v.to("npu:0") for k, v in linear.state_dict().items()}, files["npu"])
    for saved_on, path in files.items():
        hub = tmp_path / f"hub_{saved_on}"
        proc = run_python(["-m", "runtime_shim", str(converted), str(path), str(scripted), str(hub)])
        assert proc.returncode == 0, f"{saved_on}:\n{proc.stderr[-3000:]}"
        results = json.loads(proc.stdout.strip().splitlines()[-1])
        devices = {form: device for form, (device, _) in results.items()}
        assert devices == {
            **dict.fromkeys(results, "npu:1"),
            "positional": "npu:0",  # "npu": the current device
            "dict_to_cpu": "cpu",
        }, saved_on
        assert all(total == pytest.approx(expected) for _, total in results.values()), saved_on


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ddp_ranks_map_rank0_checkpoints_to_their_own_device(tmp_path: Path, builtin_tables) -> None:
    """The DDP tutorial's map_location, converted: a cuda:0 checkpoint and rank 0's npu:0 one both
    land on each rank's own NPU (hccl, 2 ranks)."""
    converted = _convert(SCRIPTS / "ddp_checkpoint.py", builtin_tables, tmp_path)
    assert "'hccl'" in converted.read_text() or '"hccl"' in converted.read_text()
    pretrained = tmp_path / "pretrained.pt"
    state = _state()
    save_as_cuda(state, pretrained)
    proc = run_python(
        ["-m", "runtime_shim", str(converted), str(pretrained), str(tmp_path), str(_free_port())]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    for rank, result in enumerate(ranks):
        own = f"npu:{rank}"
        assert result["parameters"] == [own]
        assert {device for device, _ in result["pretrained"].values()} == {own}
        assert {device for device, _ in result["resumed"].values()} == {own}
        for key, value in state.items():
            assert result["pretrained"][key][1] == pytest.approx(value.sum().item())
    # every rank resumed from rank 0's checkpoint, which a training step made differ from the start
    sums = [{key: total for key, (_, total) in result["resumed"].items()} for result in ranks]
    assert sums[0] == sums[1]
    assert sums[0] != {key: total for key, (_, total) in ranks[0]["pretrained"].items()}
