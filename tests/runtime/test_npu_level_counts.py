"""What an NPU-level kernel computes its op with is never counted as ops, on either path: not
even the ops the script also calls itself (once an op has been counted, its later calls inside
an NPU-level kernel used to be counted too), whichever kind of kernel serves them (Python, boxed
or unboxed C++, a route), with the operator check off or on; and the depth is per thread."""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator

import pytest
import torch
import torch.nn.functional as F
from test_native_dispatch import path

from runtime_shim.backend import dispatch, kernels, native
from runtime_shim.diagnostics import opcheck
from runtime_shim.runtime.state import STATE

needs_native = pytest.mark.skipif(
    not dispatch.available(), reason=f"Python path: {native.python_path_reason}"
)
PATHS = ["python", pytest.param("native", marks=needs_native)]


def _counts() -> dict[str, int]:
    """Each op's calls as the operator check reports them."""
    assert opcheck.CHECKER is not None
    return {row["op"]: row["count"] for row in opcheck.CHECKER.rows()}


def _moved(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name, 0)}


def _workload(x: torch.Tensor, cell: torch.nn.LSTMCell) -> None:
    """Ops of every kind of kernel: unboxed (add, mul, the views), boxed (cumsum, addcmul),
    Python-only (empty with a capacity check, copies across devices), routes (dropout, a cell)."""
    y = (x + 1) * x
    y.t().reshape(-1)
    torch.cumsum(y, 0)
    torch.addcmul(y, x, x)
    x.new_empty(5)
    x.cpu()
    F.dropout(x, 0.5, training=True)
    cell(x)


@contextlib.contextmanager
def _checker(mode: str, dtypes: str = "wide") -> Iterator[opcheck.OpChecker]:
    """A fresh operator check for the block (counts reset), the process's own restored after."""
    saved = opcheck.CHECKER
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            checker = opcheck.configure(mode=mode, dtypes=dtypes)
        opcheck.reset_counts()
        yield checker
    finally:
        opcheck.CHECKER = saved
        STATE.on_first_call = saved.first_call if saved else None
        opcheck.install_npu_level_ops(saved.release if saved else opcheck.load_release(None))
        dispatch.rearm()


@pytest.fixture(params=["off", "warn"])
def check(request):
    """The operator check as the tests run it (off) or as a user sees it (warn)."""
    with _checker(request.param):
        yield request.param


@pytest.mark.parametrize("served_by", PATHS)
def test_ops_the_script_calls_are_not_counted_again_inside_an_npu_level_kernel(served_by, check):
    torch.manual_seed(0)
    x = torch.rand(4, 4, device="npu")
    cell = torch.nn.LSTMCell(4, 4).to("npu")
    probe = kernels.npu_level("probe", lambda: _workload(x, cell))
    with path(served_by):
        start = _counts()
        _workload(x, cell)  # the script's own calls: each op counted (and checked once)
        direct = _moved(start, _counts())
        assert {"add.Tensor", "cumsum", "addcmul", "native_dropout", "lstm_cell"} <= direct.keys(), direct
        before = _counts()
        for _ in range(3):
            probe()
        assert _moved(before, _counts()) == {"probe": 3}
        before = _counts()
        _workload(x, cell)  # and counted again once out of it
        assert _moved(before, _counts()) == direct


@pytest.mark.parametrize("served_by", PATHS)
@pytest.mark.parametrize("dtypes", ["wide", "off"])  # mm's calls looked at one by one, or not
def test_a_composite_op_counts_itself_not_the_ops_the_script_also_calls(served_by, dtypes):
    # matmul is an op torch_npu dispatches itself (the check installs it as NPU-level); its
    # decomposition's mm is not a call a real NPU makes, although the script calls mm too
    with _checker("warn", dtypes) as checker:
        x = torch.rand(3, 3, device="npu")
        with path(served_by):
            for _ in range(2):
                torch.mm(x, x)
            for _ in range(3):
                torch.matmul(x, x)
            torch.mm(x, x)
        rows = {row["op"]: row["count"] for row in checker.rows()}
    assert (rows["mm"], rows["matmul"]) == (3, 3)


@pytest.mark.parametrize("served_by", PATHS)
def test_another_threads_ops_count_while_an_npu_level_kernel_runs(served_by, check):
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        entered.set()
        assert release.wait(30)

    probe = kernels.npu_level("probe", hold)
    x = torch.rand(4, device="npu")
    with path(served_by):
        before = _counts()
        worker = threading.Thread(target=probe)
        worker.start()
        try:
            assert entered.wait(30)
            assert not kernels.nested()  # the worker's depth, not this thread's
            for _ in range(4):
                torch.add(x, 1)
                torch.cumsum(x, 0)
        finally:
            release.set()
            worker.join(30)
        moved = _moved(before, _counts())
    assert moved == {"probe": 1, "add.Tensor": 4, "cumsum": 4}
