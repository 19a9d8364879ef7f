"""The native part (csrc/, built at first use): pinned host memory and npu generators; the Python path."""

from __future__ import annotations

import shutil

import pytest
import torch
from conftest import run_python
from test_distributed import _free_port

from runtime_shim.backend import native, native_cache
from runtime_shim.runtime.state import STATE

needs_native = pytest.mark.skipif(STATE.native is None, reason=f"Python path: {native.python_path_reason}")


@needs_native
def test_pinned_host_memory(npu):
    pinned = torch.empty(3, pin_memory=True)
    assert pinned.device.type == "cpu" and pinned.is_pinned()
    source = torch.arange(4.0)
    copy = source.pin_memory()
    assert torch.equal(copy, source) and copy.data_ptr() != source.data_ptr()
    assert copy.is_pinned() and not source.is_pinned()
    assert torch.equal(copy.to("npu").cpu(), source)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(source), batch_size=2, pin_memory=True
    )
    assert [b[0].tolist() for b in loader] == [[0.0, 1.0], [2.0, 3.0]]


@needs_native
def test_npu_generator_draws_the_host_stream(npu):
    generator = torch.Generator(device="npu")
    generator.manual_seed(7)
    drawn = torch.randn(5, generator=generator, device=npu)
    host = torch.Generator().manual_seed(7)
    assert drawn.device == npu and torch.equal(drawn.cpu(), torch.randn(5, generator=host))
    state = generator.get_state()
    first = torch.rand(3, generator=generator, device=npu)
    generator.set_state(state)
    assert torch.equal(torch.rand(3, generator=generator, device=npu), first)


def test_no_compiler_gives_the_python_path_with_one_clear_warning(monkeypatch):
    monkeypatch.setattr(native, "compiler", lambda: None)
    monkeypatch.setattr(native, "python_path_reason", "")
    with pytest.warns(RuntimeWarning, match=r"native part not loaded \(no C\+\+ compiler found"):
        assert native.load() is None


@needs_native
def test_a_build_killed_midway_does_not_stop_later_starts(tmp_path):
    # what a first use interrupted while compiling leaves: the tooling's lock file, which every
    # later start used to wait on forever
    built = native.build_directory()
    shutil.copytree(built, tmp_path / built.name, ignore=shutil.ignore_patterns("*.lock"))
    (tmp_path / built.name / native.TOOLING_LOCK).touch()
    done = run_python(
        ["-c", "from runtime_shim.backend import native; print(native.load() is not None)"],
        env_extra={native.CACHE_ENV: str(tmp_path)},
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr
    assert not (tmp_path / built.name / native.TOOLING_LOCK).exists()


_LOADS = (
    "import sys; from runtime_shim.backend import native; module = native.load(); "
    "print(module is not None, 'torch.utils.cpp_extension' in sys.modules)"
)


def _load_from_copy(tmp_path, damage=None):
    """native.load() in a child whose cache is a copy of this build, `damage` applied to it first:
    (loaded, the tooling imported, the copied folder)."""
    built = native.build_directory()
    folder = tmp_path / built.name
    shutil.copytree(built, folder, ignore=shutil.ignore_patterns("*.lock"))
    if damage:
        damage(folder)
    done = run_python(["-c", _LOADS], env_extra={native.CACHE_ENV: str(tmp_path)}, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded, tooling = done.stdout.split()
    return loaded == "True", tooling == "True", folder


@needs_native
def test_a_finished_build_loads_without_the_tooling(tmp_path):
    assert _load_from_copy(tmp_path)[:2] == (True, False)


@needs_native
def test_a_build_without_its_mark_goes_through_the_tooling_and_gets_it(tmp_path):
    # a folder from before the mark, or one whose process died between linking and marking
    loaded, tooling, folder = _load_from_copy(tmp_path, lambda f: (f / native_cache.SOURCE_MARK).unlink())
    assert (loaded, tooling) == (True, True)
    assert native_cache.finished(folder, native._CSRC)


@pytest.mark.slow
@needs_native
def test_a_module_file_that_does_not_load_is_linked_anew(tmp_path):
    def overwrite(folder):
        (folder / native_cache.MODULE_FILE).write_bytes(b"not a shared object")

    loaded, tooling, folder = _load_from_copy(tmp_path, overwrite)
    assert (loaded, tooling) == (True, True)
    assert (folder / native_cache.MODULE_FILE).read_bytes().startswith(b"\x7fELF")
    assert native_cache.finished(folder, native._CSRC)


def test_checkouts_sharing_an_interpreter_build_apart(monkeypatch):
    # the build files name the sources by path: a second checkout must not rebuild over the first
    first = native.build_directory()
    monkeypatch.setattr(native, "_CSRC", native._CSRC.parent / "elsewhere" / "csrc")
    assert native.build_directory() != first


@pytest.mark.slow
@needs_native
def test_ddp_with_find_unused_parameters(tmp_path):
    # DDP's reducer asks for pinned host buffers and asserts they are pinned.
    script = (
        "import os, torch, torch.distributed as dist, runtime_shim\n"
        "runtime_shim.activate()\n"
        f"os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT='{_free_port()}')\n"
        "dist.init_process_group('hccl', rank=0, world_size=1)\n"
        "model = torch.nn.Linear(4, 2).npu()\n"
        "ddp = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)\n"
        "ddp(torch.ones(3, 4, device='npu')).sum().backward()\n"
        "print(model.weight.grad.device, model.weight.grad.sum().item())\n"
        "dist.destroy_process_group()\n"
    )
    proc = run_python(["-c", script])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "npu:0 24.0"  # 3 rows x 8 weights


@pytest.mark.slow
def test_python_path_process(tmp_path):
    script = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import runtime_shim; runtime_shim.activate()\n"
        "import torch\n"
        "from runtime_shim.backend import native\n"
        "print([str(w.message) for w in caught if 'native part' in str(w.message)], native.python_path_reason)\n"
        "x = torch.ones(3, device='npu') * 2\n"
        "print(torch.arange(3.0).pin_memory().tolist(), x.cpu().tolist())\n"
        "try:\n"
        "    torch.Generator(device='npu')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, 'getNewGenerator' in str(exc))\n"
        # pinning is a copy for the npu only: a request naming another device gets PyTorch's kernel
        "import warnings; warnings.simplefilter('ignore', DeprecationWarning)\n"
        "print(torch.arange(3.0).is_pinned(), torch.arange(3.0).pin_memory('npu').is_pinned())\n"
        "try:\n"
        "    torch.arange(3.0).pin_memory('cuda')\n"
        "except RuntimeError as exc:\n"
        "    print('CUDA' in str(exc))\n"
    )
    proc = run_python(["-c", script], env_extra={"RUNTIME_SHIM_NATIVE": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "[] RUNTIME_SHIM_NATIVE=0"  # asked for: no warning
    assert lines[1] == "[0.0, 1.0, 2.0] [2.0, 2.0, 2.0]"
    assert lines[2] == "NotImplementedError True"
    assert lines[3:] == ["False False", "True"]


@pytest.mark.slow
def test_python_path_current_device_is_per_thread_and_the_guard_answers_device_0():
    # Without the native part the current device is still per thread for torch.npu (and the
    # kernels); PyTorch's Python device guard answers device 0, the limit runtime_shim/README.md
    # states for this path.
    script = (
        "import threading\n"
        "import runtime_shim; runtime_shim.activate()\n"
        "import torch\n"
        "torch.npu.set_device(1)\n"
        "seen = []\n"
        "def worker():\n"
        "    seen.append(torch.npu.current_device())\n"
        "    torch.npu.set_device(3)\n"
        "    seen.append(torch.empty(1, device='npu').get_device())\n"
        "thread = threading.Thread(target=worker); thread.start(); thread.join()\n"
        "print(seen, torch.npu.current_device(), torch.empty(1, device='npu').get_device())\n"
        "print(torch.accelerator.current_device_index())\n"
    )
    proc = run_python(["-c", script], env_extra={"RUNTIME_SHIM_NATIVE": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["[0, 3] 1 1", "0"]
