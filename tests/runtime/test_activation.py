"""`python -m runtime_shim script.py`: argv/__main__ semantics, workers, spawned children, no shadowing."""

from __future__ import annotations

import json

import pytest
from conftest import HERE, ROOT, run_python

pytestmark = pytest.mark.slow  # subprocesses and training runs: the --runslow tier

SCRIPT = HERE / "scripts" / "train_script.py"


def test_script_runs_with_workers_and_spawned_children(tmp_path):
    out = tmp_path / "out.json"
    proc = run_python(["-m", "runtime_shim", str(SCRIPT), str(out), "--flag", "x"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["argv"] == [str(SCRIPT), str(out), "--flag", "x"]
    assert result["name"] == "__main__"
    assert result["device"] == "npu:0"
    assert len(result["losses"]) == 4  # 32 samples / batch 8 through 2 DataLoader workers
    assert result["children"] == [
        {"device": "npu:0", "sum": 3.0, "shim": True},
        {"device": "npu:1", "sum": 6.0, "shim": True},
    ]
    assert result["npu_count"] == 8


def test_device_count_from_environment(tmp_path):
    code = "import runtime_shim; runtime_shim.activate(); import torch; print(torch.npu.device_count())"
    proc = run_python(["-c", code], env_extra={"RUNTIME_SHIM_DEVICE_COUNT": "3"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3"


def test_without_activation_torch_npu_is_missing():
    proc = run_python(["-c", "import torch_npu"])
    assert proc.returncode != 0
    assert "No module named 'torch_npu'" in proc.stderr


def test_never_shadows_a_real_torch_npu(tmp_path):
    fake = tmp_path / "site" / "torch_npu"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL = True\n")
    script = tmp_path / "s.py"
    script.write_text("import torch_npu, runtime_shim\nprint(torch_npu.REAL, runtime_shim.is_active())\n")
    proc = run_python(
        ["-m", "runtime_shim", str(script)], env_extra={"PYTHONPATH": f"{ROOT}:{tmp_path / 'site'}"}
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True False"
    assert "a real torch_npu is installed" in proc.stderr


def test_module_mode_and_exit_code(tmp_path):
    (tmp_path / "pkgmod.py").write_text(
        "import sys, torch, torch_npu\nprint(__name__, sys.argv[1:], torch.ones(1).npu().device)\nsys.exit(3)\n"
    )
    proc = run_python(["-m", "runtime_shim", "-m", "pkgmod", "a"], cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.strip() == "__main__ ['a'] npu:0"


def test_torch_npu_submodules_and_unsimulated_names():
    code = (
        "import runtime_shim; runtime_shim.activate()\n"
        "import torch, torch_npu, torch_npu.npu, torch.npu\n"
        "from torch_npu.npu.amp import GradScaler\n"
        "assert torch_npu.npu is torch.npu\n"
        "try:\n    torch_npu.npu_moe_gating_top_k\nexcept AttributeError as e:\n    print(e)\n"
        "try:\n    import torch_npu.contrib.module\nexcept ModuleNotFoundError as e:\n    print(e)\n"
    )
    proc = run_python(["-c", code])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "torch_npu.npu_moe_gating_top_k is not simulated by runtime_shim",
        "torch_npu.contrib.module is not simulated by runtime_shim",
    ]


def test_torch_version_check_message():
    from runtime_shim.torch_version import check_torch_version

    check_torch_version("2.13.0+cpu")
    check_torch_version("2.6.0")
    for bad in ("2.5.1", "2.14.0"):
        try:
            check_torch_version(bad)
        except RuntimeError as exc:
            assert str(exc) == f"runtime_shim supports torch >=2.6,<2.14, found torch {bad}"
        else:
            raise AssertionError(f"{bad} accepted")


def test_never_imports_converter_dependencies():
    code = (
        "import sys, runtime_shim; runtime_shim.activate(); import torch_npu\n"
        "print(sorted(m for m in ('libcst', 'click', 'rich') if m in sys.modules))\n"
    )
    proc = run_python(["-c", code])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("fsdp_first", [False, True], ids=["fsdp-after", "fsdp-before"])
def test_fsdp_is_patched_when_imported_not_at_activation(fsdp_first):
    """Activation leaves FSDP unimported (it brings DTensor and sympy: seconds of start-up); FSDP1's
    move of states onto the npu is patched whenever FSDP comes, before activation or after it."""
    before = "import torch.distributed.fsdp\n" if fsdp_first else ""
    code = (
        f"import sys\n{before}import runtime_shim; runtime_shim.activate()\n"
        "print('torch.distributed.fsdp' in sys.modules)\n"
        "from torch.distributed.fsdp import FullyShardedDataParallel, _init_utils\n"
        "from runtime_shim.patches import fsdp\n"
        "print(_init_utils._move_states_to_device is fsdp._move_states_to_npu)\n"
    )
    proc = run_python(["-c", code])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(fsdp_first), "True"]


def test_import_torch_npu_honours_torch_transfer_to_npu():
    """torch_npu's switch: "1" applies transfer_to_npu at `import torch_npu`, "0" does not, others refused."""
    code = (
        "import runtime_shim; runtime_shim.activate()\n"
        "import torch, torch_npu\n"
        "print(torch.cuda.is_available(), torch.ones(1, device='cuda').device)\n"
    )
    on = run_python(["-W", "ignore", "-c", code], env_extra={"TORCH_TRANSFER_TO_NPU": "1"})
    assert on.returncode == 0, on.stderr
    assert on.stdout.split() == ["True", "npu:0"]
    off = run_python(
        [
            "-c",
            "import runtime_shim; runtime_shim.activate()\nimport torch, torch_npu\n"
            "print(torch.cuda.is_available())",
        ],
        env_extra={"TORCH_TRANSFER_TO_NPU": "0"},
    )
    assert off.returncode == 0, off.stderr
    assert off.stdout.split() == ["False"]
    bad = run_python(["-c", code], env_extra={"TORCH_TRANSFER_TO_NPU": "yes"})
    assert bad.returncode != 0
    assert "TORCH_TRANSFER_TO_NPU must be '0' or '1', not 'yes'" in bad.stderr
