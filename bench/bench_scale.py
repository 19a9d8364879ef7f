#!/usr/bin/env python3
"""Speed at scale: cold vs warm (result cache) vs one file edited, -j 1 vs -j N, peak RSS.

Corpora, prepared under --work (default /tmp/bench_scale, never committed):

* ``timm``: the real public package timm==0.6.12, fetched with ``pip download --no-deps`` and
  unpacked (the sdist's ``timm/`` folder).
* ``generated``: ``--copies`` copies of that folder side by side (a large tree of real code).

Each run is the installed console script started as a user starts it, into a fresh output
folder, with its own ``--cache-dir``. Peak RSS is the largest sum of VmRSS over the process and
all its children, sampled every 20 ms from /proc (not ru_maxrss, which is one process only).

    .venv/bin/python bench/bench_scale.py                 # timm + 10 copies
    .venv/bin/python bench/bench_scale.py --copies 40
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOL = Path(sys.executable).with_name("ms_fmk_transplt")


def prepare_timm(work: Path) -> Path:
    """timm==0.6.12's package folder, downloaded once."""
    target = work / "timm"
    if target.is_dir():
        return target
    download = work / "download"
    download.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "timm==0.6.12"],
        cwd=download,
        check=True,
    )
    archive = next(download.glob("timm-0.6.12.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(download, filter="data")
    shutil.copytree(download / "timm-0.6.12" / "timm", target)
    return target


def prepare_generated(work: Path, base: Path, copies: int) -> Path:
    """`copies` copies of `base` in sub-folders copy_000.. (rebuilt when the count changes)."""
    target = work / f"generated_x{copies}"
    if not target.is_dir():
        for i in range(copies):
            shutil.copytree(base, target / f"copy_{i:03d}")
    return target


def count(tree: Path) -> tuple[int, int]:
    files = list(tree.rglob("*.py"))
    return len(files), sum(f.read_bytes().count(b"\n") for f in files)


def _tree_rss(pid: int) -> int:
    """Sum of VmRSS (bytes) of pid and its descendants."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        parent = int(fields.get("PPid", "0"))
        children.setdefault(parent, []).append(int(entry))
        rss[int(entry)] = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += rss.get(current, 0)
        todo.extend(children.get(current, []))
    return total


def run(corpus: Path, out: Path, cache: Path, jobs: int, no_cache: bool = False) -> tuple[float, int]:
    """Wall seconds and peak RSS of all processes for one conversion."""
    if out.exists():
        shutil.rmtree(out)
    command = [str(TOOL), "-i", str(corpus), "-o", str(out), "-q", "--cache-dir", str(cache)]
    command += ["-j", str(jobs)] + (["--no-cache"] if no_cache else [])
    peak = 0
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss(process.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    code = process.wait()
    wall = time.perf_counter() - started
    stop.set()
    sampler.join()
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {code}")
    return wall, peak


def measure_corpus(name: str, corpus: Path, work: Path, jobs: int) -> None:
    """Print one row per run kind: -j 1 without cache, then -j N cold, warm, one file edited."""
    files, lines = count(corpus)
    cache = work / "cache" / name.replace(" ", "_")
    shutil.rmtree(cache, ignore_errors=True)
    out = work / "out"
    edited = sorted(corpus.rglob("*.py"))[0]
    original = edited.read_bytes()
    for label in (
        "-j 1, no cache",
        f"-j {jobs}, no cache",
        f"-j {jobs}, cold cache",
        f"-j {jobs}, warm cache",
    ):
        wall, peak = run(corpus, out, cache, 1 if label.startswith("-j 1,") else jobs, "no cache" in label)
        _row(name, label, files, lines, wall, peak)
    edited.write_bytes(original + b"\nimport torch\n_bench = torch.ones(1).cuda()\n")
    try:
        wall, peak = run(corpus, out, cache, jobs)
    finally:
        edited.write_bytes(original)
    _row(name, f"-j {jobs}, one file edited", files, lines, wall, peak)


def _row(name: str, label: str, files: int, lines: int, wall: float, peak: int) -> None:
    print(
        f"{name:<14} {label:<24} {files:>6} {lines:>8} {wall:>7.2f} {lines / wall:>8.0f} {peak / 2**20:>11.0f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench_scale"))
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    timm = prepare_timm(args.work)
    corpora = [
        ("timm-0.6.12", timm),
        (f"timm x{args.copies}", prepare_generated(args.work, timm, args.copies)),
    ]
    print(f"load: {os.getloadavg()}  cores: {os.cpu_count()}")
    header = f"{'corpus':<14} {'run':<24} {'files':>6} {'lines':>8} {'wall s':>7} {'lines/s':>8} {'peak RSS MB':>11}"
    print(header)
    for name, corpus in corpora:
        measure_corpus(name, corpus, args.work, args.jobs)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
