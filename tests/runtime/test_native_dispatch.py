"""The native dispatch path (csrc/npu_dispatch.cpp) against the Python one: same results, same
memory accounting and errors, and each path reads the tensors the other made."""

from __future__ import annotations

import contextlib

import pytest
import torch

from runtime_shim.backend import dispatch, native
from runtime_shim.diagnostics import opcheck
from runtime_shim.runtime import storage as npu_storage
from runtime_shim.runtime.state import STATE

needs_native = pytest.mark.skipif(
    not dispatch.available(), reason=f"Python path: {native.python_path_reason}"
)


@contextlib.contextmanager
def path(name: str):
    """Serve npu ops by ``name`` ("native" or "python") inside the block."""
    before = dispatch.native_enabled()
    dispatch.set_dispatch(name == "native")
    try:
        yield
    finally:
        dispatch.set_dispatch(before)


def _workload(x: torch.Tensor, w: torch.Tensor) -> list[torch.Tensor]:
    y = x @ w
    z = y.view(-1)[::3].clone()
    z.add_(1.5).mul_(x.sum())
    parts = torch.chunk(y.t(), 2)
    v, i = y.max(dim=1)
    return [y, z, parts[1], v, i, torch.where(y > 0, y, z.mean()), y.to(torch.float16), y.cpu()]


@needs_native
def test_the_paths_compute_bit_identical_results():
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(6, 6, generator=g), torch.randn(6, 6, generator=g)
    results = {}
    for name in ("python", "native"):
        with path(name):
            results[name] = [t.cpu() for t in _workload(x.to("npu"), w.to("npu"))]
    expected = _workload(x, w)
    for got in results.values():
        assert all(torch.equal(a, b) and a.dtype == b.dtype for a, b in zip(got, expected))


@needs_native
def test_native_results_are_counted_and_freed():
    with path("native"):
        a = torch.ones(256, device="npu")
        before = torch.npu.memory_allocated()
        allocs = torch.npu.memory_stats()["allocation.all.allocated"]
        c = a + a
        assert torch.npu.memory_allocated() == before + 1024
        assert torch.npu.memory_stats()["allocation.all.allocated"] == allocs + 1
        assert torch.npu.max_memory_allocated() >= before + 1024
        view = c.view(16, 16)  # a view shares the storage: nothing new counted
        assert torch.npu.memory_allocated() == before + 1024
        del c, view
        assert torch.npu.memory_allocated() == before


@needs_native
def test_out_of_memory_at_capacity_reads_the_same_on_both_paths():
    a = torch.ones(1024, device="npu")
    fraction = torch.npu.get_per_process_memory_fraction()
    messages = {}
    try:
        torch.npu.set_per_process_memory_fraction((torch.npu.memory_allocated() + 2048) / (64 * 1024**3))
        for name in ("python", "native"):
            with path(name), pytest.raises(torch.OutOfMemoryError) as caught:
                a * 2
            messages[name] = str(caught.value).splitlines()[0]
    finally:
        torch.npu.set_per_process_memory_fraction(fraction)
    assert messages["native"] == messages["python"]
    assert messages["native"].startswith("NPU out of memory. Tried to allocate 4.00 KiB (NPU 0; ")


@needs_native
def test_mixed_devices_fail_alike_on_both_paths():
    messages = {}
    for name in ("python", "native"):
        with path(name), pytest.raises(RuntimeError) as caught:
            torch.ones(3, device="npu") + torch.ones(3)
        messages[name] = str(caught.value).splitlines()[0]
    assert messages["native"] == messages["python"]
    assert "found at least two devices, npu:0 and cpu!" in messages["native"]
    with path("native"):
        # zero-dim CPU tensors are scalars, as on CUDA; copies may cross devices
        assert torch.equal((torch.ones(3, device="npu") + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0))
        target = torch.zeros(3, device="npu")
        target.copy_(torch.arange(3.0))
        assert target.cpu().tolist() == [0.0, 1.0, 2.0]


@needs_native
def test_the_python_path_reads_what_the_native_path_made():
    with path("native"):
        made = torch.arange(8.0, device="npu") * 2
    assert not hasattr(made.untyped_storage(), "_npu_binding")
    with path("python"):
        assert (made + 1).cpu().tolist() == [float(2 * i + 1) for i in range(8)]
        host = npu_storage.host_view(made)
        assert host.device.type == "cpu" and host.data_ptr() == made.data_ptr()
        before = torch.npu.memory_allocated()
        made.share_memory_()  # IPC moves the bytes into shared memory, keeping the count
        assert made.untyped_storage().is_shared() and torch.npu.memory_allocated() == before
        assert made.cpu().tolist() == [float(2 * i) for i in range(8)]
        del host
    del made


@needs_native
def test_the_operator_check_counts_native_calls():
    saved = opcheck.CHECKER
    try:
        checker = opcheck.configure(mode="off")
        opcheck.reset_counts()
        with path("native"):
            x = torch.ones(4, device="npu")
            for _ in range(5):
                x.mul(3)
        counts = {row["op"]: row["count"] for row in checker.rows()}
        assert counts["mul.Tensor"] == 5
    finally:
        opcheck.CHECKER = saved
        STATE.on_first_call = saved.first_call if saved else None
        dispatch.rearm()


def test_the_environment_chooses_the_path(monkeypatch):
    # this process chose at activation (CI runs the suite with both settings)
    assert dispatch.native_enabled() == (dispatch.available() and dispatch.requested())
    monkeypatch.setenv(dispatch.ENV, "0")
    assert not dispatch.requested()
    monkeypatch.setenv(dispatch.ENV, "1")
    assert dispatch.requested()


def test_switching_to_a_missing_native_path_is_refused(monkeypatch):
    monkeypatch.setattr(dispatch, "available", lambda: False)
    with pytest.raises(RuntimeError, match="no native dispatch path in this process"):
        dispatch.set_dispatch(True)


@needs_native
def test_the_dtype_check_sees_only_the_calls_it_can_report_on():
    saved = opcheck.CHECKER
    hooked: list[str] = []

    def spy(counter, name, args):
        hooked.append(name)
        return dispatch._call_hook(counter, name, args)

    try:
        checker = opcheck.configure(mode="warn")  # dtype mode "wide": float64 and complex
        opcheck.reset_counts()
        STATE.native.set_call_hook(spy)
        with path("native"):
            x32 = torch.rand(3, 3, device="npu")
            x64 = x32.double()
            for _ in range(5):
                torch.mm(x32, x32)
            assert hooked.count("mm") == 1  # the first call; float32 is documented for mm
            with pytest.warns(UserWarning, match=r"'aten::mm' is called with dtype fp64"):
                torch.mm(x64, x64)
            torch.mm(x64, x64)  # reported once: not shown to the check again
            assert hooked.count("mm") == 2
        row = {r["op"]: r for r in checker.rows()}["mm"]
        assert row["count"] == 7 and row["unsupported_dtypes"] == "fp64"
    finally:
        STATE.native.set_call_hook(dispatch._call_hook)
        opcheck.CHECKER = saved
        STATE.on_first_call = saved.first_call if saved else None
        dispatch.rearm()


def _mm_count_through_matmul() -> int:
    """The dtype check's count of mm after direct mm calls and mm reached inside matmul (an
    NPU-level kernel, whose insides a real NPU never dispatches)."""
    checker = opcheck.configure(mode="warn")
    opcheck.reset_counts()
    x64 = torch.rand(3, 3, device="npu", dtype=torch.float64)
    x32 = torch.rand(3, 3, device="npu")
    with pytest.warns(UserWarning, match=r"'aten::mm' is called with dtype fp64"):
        torch.mm(x64, x64)
    for _ in range(4):
        torch.mm(x32, x32)  # counted
        torch.matmul(x64, x64)  # counted as matmul; its mm is not
        torch.matmul(x32, x32)
    dispatch.flush_counts()
    rows = {r["op"]: r for r in checker.rows()}
    assert rows["matmul"]["count"] == 8 and rows["matmul"]["unsupported_dtypes"] == "fp64"
    return rows["mm"]["count"]


def _autograd_kernel_of(qualified: str) -> str:
    table = torch._C._dispatch_dump_table(qualified)
    return next(line for line in table.splitlines() if line.startswith("AutogradPrivateUse1:"))


@needs_native
def test_calls_inside_npu_level_kernels_are_counted_alike_on_both_paths():
    saved = opcheck.CHECKER
    try:
        counts = {}
        for name in ("python", "native"):
            with path(name):
                counts[name] = _mm_count_through_matmul()
                # the NPU-level kernel is the path's own: C++ on the native one
                assert ("npu_dispatch.cpp" in _autograd_kernel_of("aten::matmul")) == (name == "native")
        assert counts == {"python": 5, "native": 5}
    finally:
        opcheck.CHECKER = saved
        STATE.on_first_call = saved.first_call if saved else None
        dispatch.rearm()


@needs_native
def test_ops_inside_npu_level_kernels_stay_in_cpp_once_the_check_has_seen_them():
    saved = opcheck.CHECKER
    hooked = []

    def spy(counter, name, args):
        hooked.append(name)
        return dispatch._call_hook(counter, name, args)

    try:
        checker = opcheck.configure(mode="warn")
        opcheck.reset_counts()
        STATE.native.set_call_hook(spy)
        with path("native"):
            x64 = torch.rand(3, 3, device="npu", dtype=torch.float64)
            with pytest.warns(UserWarning, match=r"'aten::mm' is called with dtype fp64"):
                torch.mm(x64, x64)
            assert hooked.count("mm") == 1
            for _ in range(3):
                torch.matmul(x64, x64)  # its mm is float64, a dtype the check watches, but nested
            assert hooked.count("mm") == 1
            assert hooked.count("matmul") == 1
        rows = {r["op"]: r for r in checker.rows()}
        assert rows["mm"]["count"] == 1 and rows["matmul"]["count"] == 3
    finally:
        STATE.native.set_call_hook(dispatch._call_hook)
        opcheck.CHECKER = saved
        STATE.on_first_call = saved.first_call if saved else None
        dispatch.rearm()
