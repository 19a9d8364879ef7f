"""bench/bench_ops.py: the per-op micro-bench measures the same ops on both devices, on every path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_ops  # bench/ holds scripts, not a package


def test_the_measured_ops_compute_the_same_on_cpu_and_npu():
    cpu, npu = bench_ops._ops("cpu"), bench_ops._ops("npu:0")
    assert (
        list(cpu) == list(npu) == ["add", "view", "add_", "matmul", "sdpa", "dropout", "conv", "lstm", "gru"]
    )
    for name in cpu:
        torch.manual_seed(0)  # dropout draws its mask from the host generator on both devices
        expected = cpu[name]()
        torch.manual_seed(0)
        got = npu[name]()
        assert got.device.type == "npu", name
        assert torch.equal(got.cpu(), expected), name


def test_rows_cover_every_op_and_path_with_positive_times():
    rows = bench_ops.rows(["add", "view"], calls=20, rounds=3)
    paths = bench_ops.dispatch_paths()
    assert [(op, path) for op, path, _, _ in rows] == [(op, p) for op in ("add", "view") for p in paths]
    assert all(cpu > 0 and npu > 0 for _, _, cpu, npu in rows)


def test_rows_can_be_timed_by_the_processs_cpu_time(monkeypatch):
    ticks = iter(range(0, 10**6, 3))  # a CPU clock advancing 3 s per reading
    monkeypatch.setitem(bench_ops.CLOCKS, "cpu", lambda: float(next(ticks)))
    rows = bench_ops.rows(["add"], calls=2, rounds=3, clock="cpu")
    assert [(cpu, npu) for _, _, cpu, npu in rows] == [(1.5e6, 1.5e6)] * len(bench_ops.dispatch_paths())


def test_the_runtime_bench_times_steps_by_the_clock_asked_for(monkeypatch):
    import bench_runtime

    ticks = iter(range(0, 10**6, 2))
    monkeypatch.setitem(bench_runtime.CLOCKS, "cpu", lambda: float(next(ticks)))
    timing = bench_runtime.measure(
        lambda: torch.nn.Linear(2, 2), _batch, "sgd", steps=3, warmup=1, clock="cpu"
    )
    assert (timing.cpu, timing.npu, timing.ratio) == (2.0, 2.0, 1.0)


def test_the_runtime_bench_gives_each_turn_its_own_ratio(monkeypatch):
    # Steps of 1 s on the CPU; on the npu 2 s in the first turn and 3 s after: three turns of two
    # steps each (the npu goes first in the second turn), ratios 2, 3, 3; medians over all steps.
    import bench_runtime

    clock = [0.0]
    npu_steps = [0]

    def stepper(build, batch_fn, optimizer, device, foreach=None):
        def step():
            if device == "cpu":
                clock[0] += 1.0
            else:
                npu_steps[0] += 1
                clock[0] += 2.0 if npu_steps[0] <= 2 else 3.0

        return step

    monkeypatch.setattr(bench_runtime, "_stepper", stepper)
    monkeypatch.setitem(bench_runtime.CLOCKS, "wall", lambda: clock[0])
    timing = bench_runtime.measure(None, None, "sgd", steps=6, warmup=0, block=2)
    assert timing.turns == (2.0, 3.0, 3.0)
    assert (timing.cpu, timing.npu) == (1.0, 3.0)


@pytest.mark.parametrize("path, foreach", [("device", None), ("loop", False), ("foreach", True)])
def test_the_runtime_bench_gives_both_devices_the_optimizer_path_asked_for(
    monkeypatch, capsys, path, foreach
):
    import bench_runtime

    seen = []

    def sgd(params, foreach):
        seen.append(foreach)
        return torch.optim.SGD(params, lr=0.1, foreach=foreach)

    monkeypatch.setitem(bench_runtime.OPTIMIZERS, "sgd", sgd)
    args = [
        "--models",
        "mlp",
        "--optimizers",
        "sgd",
        "--steps",
        "1",
        "--warmup",
        "0",
        "--optimizer-path",
        path,
    ]
    assert bench_runtime.main(args) == 0
    assert seen == [foreach, foreach]  # the CPU copy, then the npu copy
    assert f"optimizer path: {path}" in capsys.readouterr().out


def _batch(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(4, 2, generator=generator), torch.randint(0, 2, (4,), generator=generator)
