"""Code written for several devices (engine/devices/dispatch_sites.py) across a project's own modules.

The fixtures (tests/fixtures/rules/device_dispatch) hold one module each; here the dispatch
helper lives in another module of the project, and each case has a twin where the project has
no NPU alternative and the CUDA branch converts as before.
"""

from __future__ import annotations

from pathlib import Path

from ms_fmk_transplt.run import Options, convert_project

DEVICES = (
    "import torch\n"
    "\n"
    "\n"
    "def is_npu_available():\n"
    "    return hasattr(torch, 'npu') and torch.npu.is_available()\n"
    "\n"
    "\n"
    "def use_cuda():\n"
    "    return torch.cuda.is_available()\n"
)

TRAIN = (
    "import torch\n"
    "from helpers.devices import is_npu_available, use_cuda\n"
    "\n"
    "\n"
    "def synchronize():\n"
    "    if use_cuda():\n"
    "        torch.cuda.synchronize()\n"
    "{npu}"
    "\n"
    "\n"
    "model = torch.nn.Linear(2, 2).cuda()\n"
)
NPU_BRANCH = "    elif is_npu_available():\n        torch.npu.synchronize()\n"


def _convert(tmp_path: Path, train: str, devices: str = DEVICES) -> dict[str, str]:
    root = tmp_path / "proj"
    for rel, text in {"helpers/__init__.py": "", "helpers/devices.py": devices, "train.py": train}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    run = convert_project(Options(source=root, output=tmp_path / "out", use_cache=False))
    out = Path(run.output_root)
    return {rel: (out / rel).read_text() for rel in ("train.py", "helpers/devices.py")}


def test_a_helper_of_another_module_routes_the_npu(tmp_path: Path) -> None:
    out = _convert(tmp_path, TRAIN.format(npu=NPU_BRANCH))
    assert (
        "    if use_cuda():\n        torch.cuda.synchronize()\n    elif is_npu_available():\n"
        in out["train.py"]
    )
    assert "model = torch.nn.Linear(2, 2).npu()\n" in out["train.py"]  # outside the dispatch: converted
    # the helper module offers the NPU's predicate beside CUDA's: CUDA's keeps testing for CUDA
    assert "def use_cuda():\n    return torch.cuda.is_available()\n" in out["helpers/devices.py"]


def test_twin_without_an_npu_branch_the_cuda_branch_converts(tmp_path: Path) -> None:
    out = _convert(tmp_path, TRAIN.format(npu=""))
    assert "    if use_cuda():\n        torch.npu.synchronize()\n" in out["train.py"]


def test_twin_a_helper_module_without_an_npu_predicate_converts_its_cuda_one(tmp_path: Path) -> None:
    alone = DEVICES.replace(
        "def is_npu_available():\n    return hasattr(torch, 'npu') and torch.npu.is_available()\n", ""
    )
    out = _convert(tmp_path, TRAIN.format(npu="").replace("is_npu_available, ", ""), alone)
    assert "def use_cuda():\n    return torch.npu.is_available()\n" in out["helpers/devices.py"]
