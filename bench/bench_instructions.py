#!/usr/bin/env python3
"""Instructions per training step on the simulated npu against native CPU, counted by callgrind.

On a machine shared with other jobs, bench_runtime.py's time ratios move by 10 % or more from run
to run, and a change worth 2 % cannot be seen without many interleaved runs. An instruction count
does not move: each (model, device) pair runs in its own process under
``valgrind --tool=callgrind``, which counts only the measured steps (a client request issued
through a small C helper, compiled with ``cc`` at first use), and the npu/CPU ratio of those
counts repeats to a few tenths of a percent.

An instruction count is not a time: a cache miss, an atomic or a lock costs more than its count
says, so this ratio sits under bench_runtime.py's (by 3-10 points on the small models, see
docs/benchmarks.md). It says how much work the simulation adds per step, and, with ``--top N``,
in which functions (exclusive counts, npu minus CPU, from ``callgrind_annotate``).

    python bench/bench_instructions.py [--models gru,mlp,...] [--steps 3] [--warmup 3] [--top 25]

Needs valgrind (callgrind_annotate with it) and a C compiler; a step runs ~50x slower under
valgrind, and each process imports torch under it first (1-3 minutes a process).
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_runtime  # noqa: E402

_HELPER_SOURCE = """
#include <valgrind/callgrind.h>
void bench_collect(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; CALLGRIND_TOGGLE_COLLECT; }
void bench_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_STOP_INSTRUMENTATION; }
"""


def helper_library() -> Path:
    """The C helper that switches callgrind's counting on and off, built once per source."""
    digest = hashlib.sha256(_HELPER_SOURCE.encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"bench_instructions-{os.getuid()}"
    library = folder / f"collect-{digest}.so"
    if not library.exists():
        folder.mkdir(parents=True, exist_ok=True)
        source = folder / f"collect-{digest}.c"
        source.write_text(_HELPER_SOURCE)
        partial = library.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(partial), str(source)], check=True)
        partial.replace(library)
    return library


def child(model: str, device: str, steps: int, warmup: int, threads: int, optimizer: str = "sgd") -> None:
    """Run in valgrind: build the model, warm up uncounted, count `steps` steps."""
    import torch

    import runtime_shim

    runtime_shim.activate()
    if threads:
        torch.set_num_threads(threads)
    configs = bench_runtime._configs(bench_runtime._load_models())
    _, build, batch_fn = configs[model]
    step = bench_runtime._stepper(build, batch_fn, optimizer, device)
    for _ in range(warmup):
        step()
    collect = ctypes.CDLL(str(helper_library()))
    collect.bench_collect()
    for _ in range(steps):
        step()
    collect.bench_stop()


def count(model: str, device: str, args: argparse.Namespace, out: Path) -> int:
    """Instructions of `args.steps` steps of `model` on `device` (callgrind's output kept in `out`)."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",  # torch imports at full speed until the helper starts counting
        "--collect-atstart=no",
        f"--callgrind-out-file={out}",
        sys.executable,
        __file__,
        "--child",
        model,
        device,
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--threads",
        str(args.threads),
        "--optimizer",
        args.optimizer,
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        sys.exit(f"error: {model} on {device} under valgrind exited {done.returncode}: {tail}")
    return totals(out)


def totals(out: Path) -> int:
    for line in out.read_text().splitlines():
        if line.startswith("totals:"):  # callgrind's "summary:" is 0 when counting started late
            return int(line.split()[1])
    sys.exit(f"error: no instruction total in {out}")


_ROW = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+(.*)$")


def by_function(out: Path) -> dict[str, int]:
    """Exclusive instructions per function (callgrind_annotate, file names dropped)."""
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", str(out)], capture_output=True, text=True, check=True
    ).stdout
    counts: dict[str, int] = {}
    total = totals(out)
    for line in text.splitlines():
        row = _ROW.match(line)
        if not row:
            continue
        own = int(row.group(1).replace(",", ""))
        if own >= total:  # a caller outside the counted steps (main, the interpreter's loop)
            continue
        name = re.sub(r" \[[^\]]*\]$", "", row.group(2))
        where, _, function = name.partition(":")
        if function and where.startswith(("/", ".", "?")):  # "file:function" -> "function"
            name = function
        counts[name] = counts.get(name, 0) + own
    return counts


def growth(cpu: dict[str, int], npu: dict[str, int]) -> list[tuple[str, int, int]]:
    """(function, CPU count, npu count), the largest growth on the npu first."""
    rows = [(name, cpu.get(name, 0), npu.get(name, 0)) for name in cpu.keys() | npu.keys()]
    return sorted(rows, key=lambda row: (row[1] - row[2], row[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,cnn,lstm,transformer,view_inplace,gru,llama")
    parser.add_argument("--steps", type=int, default=3, help="counted steps per model and device")
    parser.add_argument("--warmup", type=int, default=3, help="uncounted steps first")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (0: torch default)")
    parser.add_argument("--optimizer", choices=sorted(bench_runtime.OPTIMIZERS), default="sgd")
    parser.add_argument("--top", type=int, default=0, help="print the N functions that grew most on the npu")
    parser.add_argument("--keep", type=Path, help="keep callgrind's output files in this folder")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "DEVICE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("RUNTIME_SHIM_OPCHECK", "off")  # as bench_runtime.py: the children inherit it
    if args.child:
        child(*args.child, args.steps, args.warmup, args.threads, args.optimizer)
        return
    missing = [tool for tool in ("valgrind", "callgrind_annotate", "cc") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"error: bench_instructions.py needs {', '.join(missing)} on PATH")
    helper_library()  # built once here, not in each child under valgrind
    import torch

    models = [m for m in args.models.split(",") if m]
    print(f"torch {torch.__version__}, {args.threads or 'default'} threads, {args.steps} counted steps after")
    print(f"{args.warmup} warm-up steps, {args.optimizer}, callgrind instruction counts\n")
    print("| model | CPU instr/step | simulated NPU instr/step | ratio |")
    print("|---|---:|---:|---:|")
    configs = bench_runtime._configs(bench_runtime._load_models())
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        diffs = []
        for model in models:
            outs = {
                device: folder / f"callgrind.{model}.{device.replace(':', '')}" for device in ("cpu", "npu:0")
            }
            cpu, npu = (count(model, device, args, out) for device, out in outs.items())
            print(
                f"| {configs[model][0]} | {cpu / args.steps:,.0f} | {npu / args.steps:,.0f} | {npu / cpu:.3f}x |"
            )
            if args.top:
                diffs.append((model, outs))
        for model, outs in diffs:
            print(f"\n{model}: the {args.top} functions that grew most on the npu (instructions per step)\n")
            print("| npu - CPU | CPU | npu | function |")
            print("|---:|---:|---:|---|")
            for name, cpu, npu in growth(by_function(outs["cpu"]), by_function(outs["npu:0"]))[: args.top]:
                cpu, npu = cpu // args.steps, npu // args.steps
                print(f"| {npu - cpu:,} | {cpu:,} | {npu:,} | `{name[:120]}` |")


if __name__ == "__main__":
    main()
