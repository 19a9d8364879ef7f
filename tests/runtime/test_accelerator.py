"""Device-agnostic PyTorch (`--target accelerator` output) on the simulated npu, unmodified:
torch.accelerator with its memory functions, torch.get_device_module, the default backend, and a
script that never imports torch_npu under `python -m runtime_shim`."""

from __future__ import annotations

import textwrap

import torch
from conftest import run_python


def test_the_npu_is_the_current_accelerator() -> None:
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator(check_available=True) == torch.device("npu")
    assert torch.accelerator.device_count() == torch.npu.device_count()
    assert torch.get_device_module() is torch.npu
    assert torch.distributed.get_default_backend_for_device("npu") == "hccl"
    assert torch.distributed.get_default_backend_for_device(torch.device("npu", 0)) == "hccl"
    assert torch.Stream().device.type == torch.Event().device.type == "npu"


def test_set_device_index_and_synchronize() -> None:
    before = torch.accelerator.current_device_index()
    try:
        torch.accelerator.set_device_index(1)
        assert torch.npu.current_device() == torch.accelerator.current_device_index() == 1
        torch.accelerator.synchronize()
        torch.accelerator.synchronize(1)
    finally:
        torch.accelerator.set_device_index(before)


def test_memory_functions_report_the_npus_own_accounting(npu) -> None:
    torch.accelerator.empty_cache()
    torch.accelerator.reset_peak_memory_stats()
    base = torch.accelerator.memory_allocated()
    held = torch.ones(1 << 16, device=npu)  # 256 KiB of float32
    assert torch.accelerator.memory_allocated() - base == held.untyped_storage().nbytes() == 1 << 18
    assert torch.accelerator.memory_allocated() == torch.npu.memory_allocated()
    assert torch.accelerator.max_memory_allocated() == torch.npu.max_memory_allocated()
    assert torch.accelerator.memory_reserved() == torch.npu.memory_reserved()
    assert torch.accelerator.max_memory_reserved() == torch.npu.max_memory_reserved()
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.npu.memory_allocated()
    del held
    assert torch.accelerator.memory_allocated() == base
    assert torch.accelerator.max_memory_allocated() >= base + (1 << 18)
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == base
    torch.accelerator.reset_accumulated_memory_stats()
    torch.accelerator.empty_cache()
    assert torch.accelerator.memory_reserved() == torch.npu.memory_reserved()
    free, total = torch.accelerator.get_memory_info()
    assert (free, total) == torch.npu.mem_get_info()


SCRIPT = textwrap.dedent(
    """
    import torch

    device = torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")
    x = torch.ones(4, device=device)
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()
    used = torch.accelerator.memory_allocated() if torch.accelerator.is_available() else 0
    backend = torch.distributed.get_default_backend_for_device(device)
    print(device.type, x.device.type, used, backend, "torch_npu" in __import__("sys").modules)
    """
)


def test_a_script_that_never_imports_torch_npu_runs_on_the_npu_and_on_the_cpu(tmp_path) -> None:
    script = tmp_path / "agnostic.py"
    script.write_text(SCRIPT)
    on_npu = run_python(["-m", "runtime_shim", str(script)], cwd=tmp_path)
    assert on_npu.returncode == 0, on_npu.stderr[-3000:]
    assert on_npu.stdout.split() == ["npu", "npu", "16", "hccl", "False"]
    on_cpu = run_python([str(script)], cwd=tmp_path)
    assert on_cpu.returncode == 0, on_cpu.stderr[-3000:]
    assert on_cpu.stdout.split() == ["cpu", "cpu", "0", "gloo", "False"]
