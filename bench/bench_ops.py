#!/usr/bin/env python3
"""Per-op cost on the simulated npu against native CPU: microseconds per op, side by side in one process.

Each op is called ``--calls`` times in a loop on CPU tensors, then on npu tensors (alternating
which goes first each round), for ``--rounds`` rounds; a figure is the median round's time over
the number of calls. The ops are the ones a small training step is made of:

* ``add``: ``a + b`` on two 4-element float tensors (a fresh output);
* ``view``: ``a.view(2, 2)`` (metadata only, the output aliases its input);
* ``add_``: ``a.add_(b)`` (in place);
* ``matmul``: ``x @ w`` on two 8x8 float tensors (a small kernel, a fresh output);
* ``sdpa``: causal ``scaled_dot_product_attention`` over (2, 2, 4, 8) float tensors, forward
  only (the npu's route that keeps the CPU's kernel choice, runtime_shim/backend/attention.py);
* ``dropout``: ``F.dropout(x, 0.1, training=True)`` on a 16x8 float tensor (counted as the
  NPU's native_dropout, computed as the CPU computes it).
* ``conv``: ``F.conv2d`` of a (2, 3, 8, 8) float tensor with a (4, 3, 3, 3) kernel, padding 1
  (the npu receives it as ``convolution_overrideable``, computed as the CPU's ``convolution``);
* ``lstm``, ``gru``: one-layer ``nn.LSTM(8, 8)`` / ``nn.GRU(8, 8)`` forward over a (4, 2, 8)
  sequence (the npu's routes that run the CPU's kernels, runtime_shim/backend/rnn.py): one call
  is a whole layer, ~5 ops for LSTM and ~60 for GRU's unfused cells.

``--clock cpu`` times each round by the process's CPU time instead of the wall clock: on a machine
shared with other jobs, time spent waiting for a core then counts for neither device.

The npu column is measured once per dispatch path the process has: ``python`` (per-op kernels
written in Python, runtime_shim/backend/kernels.py) and, when the native part is built,
``native`` (C++ kernels, runtime_shim/csrc/). "overhead" is npu minus CPU.

    python bench/bench_ops.py [--calls 2000] [--rounds 15] [--threads 1] [--clock wall|cpu]
        [--ops add,view,add_,matmul,sdpa,dropout,conv,lstm,gru]

Target (issue 22): overhead under 2 us per op.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _ops(device: str) -> dict[str, Callable[[], object]]:
    """The measured ops, each a no-argument callable over tensors made on ``device``."""
    import torch

    a = torch.arange(4.0).to(device)
    b = torch.ones(4).to(device)
    inplace = torch.zeros(4).to(device)
    small = torch.full((4,), 1e-9).to(device)  # added in place many times without overflow
    x = torch.randn(8, 8, generator=torch.Generator().manual_seed(0)).to(device)
    w = torch.randn(8, 8, generator=torch.Generator().manual_seed(1)).to(device)
    q = torch.randn(2, 2, 4, 8, generator=torch.Generator().manual_seed(2)).to(device)
    seq = torch.randn(4, 2, 8, generator=torch.Generator().manual_seed(3)).to(device)
    image = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(5)).to(device)
    kernel = torch.randn(4, 3, 3, 3, generator=torch.Generator().manual_seed(6)).to(device)
    torch.manual_seed(4)  # the same weights on both devices
    lstm, gru = torch.nn.LSTM(8, 8).to(device), torch.nn.GRU(8, 8).to(device)
    functional = torch.nn.functional
    return {
        "add": lambda: a + b,
        "view": lambda: a.view(2, 2),
        "add_": lambda: inplace.add_(small),
        "matmul": lambda: x @ w,
        "sdpa": lambda: functional.scaled_dot_product_attention(q, q, q, is_causal=True),
        "dropout": lambda: functional.dropout(x, 0.1, training=True),
        "conv": lambda: functional.conv2d(image, kernel, padding=1),
        "lstm": lambda: lstm(seq)[0],
        "gru": lambda: gru(seq)[0],
    }


#: What a round is timed by: the wall clock, or the CPU time of the whole process (every thread).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def _time(fn: Callable[[], object], calls: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds (by ``clock``) for ``calls`` calls of ``fn``."""
    start = clock()
    for _ in range(calls):
        fn()
    return clock() - start


def measure(
    cpu_fn: Callable[[], object], npu_fn: Callable[[], object], calls: int, rounds: int, clock: str = "wall"
) -> tuple[float, float]:
    """Median microseconds per call (cpu, npu), interleaved round by round, timed by ``CLOCKS[clock]``."""
    timer = CLOCKS[clock]
    times: dict[str, list[float]] = {"cpu": [], "npu": []}
    _time(cpu_fn, calls // 10 + 1, timer)  # warm-up: caches, first-call checks
    _time(npu_fn, calls // 10 + 1, timer)
    for i in range(rounds):
        order = (("cpu", cpu_fn), ("npu", npu_fn)) if i % 2 == 0 else (("npu", npu_fn), ("cpu", cpu_fn))
        for name, fn in order:
            times[name].append(_time(fn, calls, timer))
    return statistics.median(times["cpu"]) / calls * 1e6, statistics.median(times["npu"]) / calls * 1e6


def dispatch_paths() -> list[str]:
    """The dispatch paths this process can switch between: ``python`` and, if built, ``native``."""
    from runtime_shim.backend import dispatch

    return ["python", "native"] if dispatch.available() else ["python"]


def use_path(path: str) -> None:
    """Route npu ops through ``path`` from now on."""
    from runtime_shim.backend import dispatch

    dispatch.set_dispatch(path == "native")


def rows(
    names: list[str], calls: int, rounds: int, clock: str = "wall"
) -> list[tuple[str, str, float, float]]:
    """(op, path, CPU us/op, npu us/op) for every op and every dispatch path."""
    cpu_ops = _ops("cpu")
    npu_ops = _ops("npu:0")
    out = []
    paths = dispatch_paths()
    from runtime_shim.backend import dispatch

    restore = dispatch.native_enabled()
    for name in names:
        for path in paths:
            use_path(path)
            cpu, npu = measure(cpu_ops[name], npu_ops[name], calls, rounds, clock)
            out.append((name, path, cpu, npu))
    dispatch.set_dispatch(restore)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the micro-bench and print a markdown table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (0: torch default)")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="time rounds by (cpu: process CPU time)"
    )
    parser.add_argument("--ops", default="add,view,add_,matmul,sdpa,dropout,conv,lstm,gru")
    args = parser.parse_args(argv)

    os.environ.setdefault("RUNTIME_SHIM_OPCHECK", "off")
    import torch

    import runtime_shim

    runtime_shim.activate()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.rounds} rounds of "
        f"{args.calls} calls, interleaved, medians, {args.clock} clock"
    )
    print()
    print("| op | npu path | CPU us/op | simulated NPU us/op | overhead us/op | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for name, path, cpu, npu in rows(args.ops.split(","), args.calls, args.rounds, args.clock):
        print(f"| {name} | {path} | {cpu:.2f} | {npu:.2f} | {npu - cpu:.2f} | {npu / cpu:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
