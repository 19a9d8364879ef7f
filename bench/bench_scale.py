#!/usr/bin/env python3
"""Speed at scale: cold vs warm (result cache) vs one file edited, -j 1 vs -j N, peak RSS, and
Huawei's msFmkTransplt on the same corpora in the same run.

Corpora, prepared under --work (default /tmp/bench_scale, never committed), chosen with
``--corpus NAME`` (repeatable; default ``timm``) and ``--corpus-dir PATH`` (repeatable):

* ``timm``: the public package timm==0.6.12 (196 files, 54k lines), its sdist fetched with
  ``pip download --no-deps --no-binary :all:`` and unpacked, the ``timm/`` folder.
* ``transformers``: transformers==4.46.3 the same way, the ``src/transformers`` folder (1,813
  files, 1.0M lines).
* ``generated``: ``--copies`` copies of timm and transformers side by side
  (``copy_000/timm``, ``copy_000/transformers``, ...): ~1.06M lines per copy.
* ``--corpus-dir PATH``: any folder as it is (e.g. pytorch/examples), named by its base name;
  the Ascend ModelZoo-PyTorch tree (50,733 ``.py`` files, 10.3M lines) as
  ``git --git-dir=MIRROR archive HEAD | tar -x -C /tmp/mz`` from a snapshot of
  github.com/Ascend/ModelZoo-PyTorch.

``--size-scaling 0.1,1,5`` adds bench/size_scaling.py's seconds per MB of one file of each
size, so one run prints every figure of the speed targets. ``--validate`` reads every report of
each run back (bench/check_reports.py: report.json, change_list.csv, the log and the xlsx agree)
and prints what it found.

Each of our runs is the installed console script started as a user starts it
(``ms_fmk_transplt -i CORPUS -o OUT -q -v RELEASE --cache-dir C -j N``) into a fresh output
folder of its own (removed with the others once the corpus is done, not just before the next
run). Run kinds (``--runs``, default all): ``nocache1`` (-j 1, --no-cache), ``nocacheN``
(-j N, --no-cache), ``cold`` (-j N, empty cache), ``warm`` (-j N, the same cache again),
``edit`` (-j N, one file edited); ``warm`` and ``edit`` bring ``cold`` along, which fills the
cache. Peak RSS is the largest sum of VmRSS over the process and all its children, sampled
every 20 ms from /proc (ru_maxrss is one process only); CPU seconds are user+sys of the process
and its reaped workers (``os.wait4``).

With ``--msft-src DIR --msft-python PY``, msFmkTransplt converts each corpus named in
``--msft-corpora`` (default: the smallest selected corpus; it needs ~2 s per file) once, as
``cd DIR && PYTHONPATH=DIR PY ms_fmk_transplt.py -i CORPUS -o OUT -v RELEASE </dev/null``,
and theirs/ours is its wall time over our ``nocacheN`` run (run for that corpus if not chosen;
with ``--repeat N``, the median of N such runs).

Both tools run with their bytecode written first (``python -m compileall`` of our package and of
msFmkTransplt's source folder), as a user has it: pip compiles a wheel's modules when it installs
them, and a script run from its source folder writes its own on the first run. An editable
install under ``PYTHONDONTWRITEBYTECODE=1`` has none and compiled ~50 of our modules from source
in every run (~50 ms, 2026-11-27), which no user pays.

    .venv/bin/python bench/bench_scale.py                               # timm, ~1 min
    .venv/bin/python bench/bench_scale.py --corpus generated --copies 1  # the ~1M-line tree
    .venv/bin/python bench/bench_scale.py --corpus-dir /tmp/ex \\
        --msft-src /tmp/mstt/msfmktransplt/src --msft-python /tmp/msft-venv/bin/python
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_reports  # sibling scripts, not a package
from bench_converter import find_msft_dir

REPO = Path(__file__).resolve().parent.parent
TOOL = Path(sys.executable).with_name("ms_fmk_transplt")

# name: (PyPI project, pinned version, package folder inside the sdist)
PINNED = {
    "timm": ("timm", "0.6.12", "timm"),
    "transformers": ("transformers", "4.46.3", "src/transformers"),
}
RUN_KINDS = ("nocache1", "nocacheN", "cold", "warm", "edit")
DEAD_PROXY = "http://127.0.0.1:9"


def prepare_pinned(work: Path, name: str) -> Path:
    """The package folder of a pinned sdist from PyPI, downloaded and unpacked once."""
    project, version, inner = PINNED[name]
    target = work / f"{project}-{version}"
    if (target / ".complete").is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    download = work / "download"
    download.mkdir(parents=True, exist_ok=True)
    archive = download / f"{project}-{version}.tar.gz"
    if not archive.is_file():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                project + "==" + version,
            ],
            cwd=download,
            check=True,
        )
    with tarfile.open(archive) as tar:
        tar.extractall(download, filter="data")
    shutil.copytree(download / f"{project}-{version}" / inner, target)
    (target / ".complete").write_text("ok\n")
    return target


def prepare_timm(work: Path) -> Path:
    """timm==0.6.12's package folder."""
    return prepare_pinned(work, "timm")


def prepare_transformers(work: Path) -> Path:
    """transformers==4.46.3's src/transformers folder."""
    return prepare_pinned(work, "transformers")


def prepare_generated(work: Path, copies: int) -> Path:
    """`copies` copies of timm and transformers side by side in copy_000.. (one tree per count)."""
    target = work / f"generated_x{copies}"
    if (target / ".complete").is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    bases = [prepare_timm(work), prepare_transformers(work)]
    for i in range(copies):
        for base in bases:
            shutil.copytree(
                base, target / f"copy_{i:03d}" / base.name, ignore=shutil.ignore_patterns(".complete")
            )
    (target / ".complete").write_text("ok\n")
    return target


PREPARE: dict[str, Callable[[Path, int], Path]] = {
    "timm": lambda work, copies: prepare_timm(work),
    "transformers": lambda work, copies: prepare_transformers(work),
    "generated": prepare_generated,
}


def corpus_label(name: str, copies: int) -> str:
    """The row label of a named corpus."""
    if name == "generated":
        return f"generated x{copies}"
    project, version, _ = PINNED[name]
    return f"{project}-{version}"


def count(tree: Path) -> tuple[int, int]:
    files = list(tree.rglob("*.py"))
    return len(files), sum(f.read_bytes().count(b"\n") for f in files)


def _rss(pid: int) -> int:
    """VmRSS (bytes) of one process; 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _children(pid: int) -> list[int] | None:
    """The children of pid from /proc/PID/task/*/children; None where the kernel has no such file."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except FileNotFoundError:
            if not Path(f"/proc/{pid}/task/{task}").exists():
                continue  # the thread ended meanwhile
            return None
        except OSError:
            continue
    return found


def _tree_rss(pid: int) -> int:
    """Sum of VmRSS (bytes) of pid and its descendants.

    Walked by each process's children files: a few reads per sample. Scanning every process in
    /proc took ~1.7 ms a sample here, 8 % of a core at one sample per 20 ms, taken from the run
    being measured; that scan is the fallback where the kernel lacks the children files."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        children = _children(current)
        if children is None:
            return _scanned_tree_rss(pid)
        total += _rss(current)
        todo.extend(children)
    return total


def _scanned_tree_rss(pid: int) -> int:
    """`_tree_rss` by scanning every process's parent in /proc."""
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


@dataclass
class Measured:
    wall: float
    cpu: float
    peak: int
    code: int
    tail: str


def measure(command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Measured:
    """Run one process tree: wall s, user+sys CPU s of it and its reaped children, peak RSS sum,
    exit code and the end of its output."""
    log = subprocess.PIPE
    peak = 0
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
    )
    stop = threading.Event()
    output: list[bytes] = []

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss(process.pid))
            time.sleep(0.02)

    def drain() -> None:
        if process.stdout is not None:
            output.append(process.stdout.read())

    threads = [threading.Thread(target=sample), threading.Thread(target=drain)]
    for thread in threads:
        thread.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    for thread in threads:
        thread.join()
    tail = b"".join(output).decode("utf-8", "replace")[-600:]
    return Measured(wall, usage.ru_utime + usage.ru_stime, peak, process.returncode, tail)


def compile_bytecode(python: str, folder: Path) -> None:
    """Write the bytecode of every module under `folder` (see the module docstring)."""
    subprocess.run([python, "-m", "compileall", "-q", str(folder)], check=True, stdout=subprocess.DEVNULL)


def ours(corpus: Path, out: Path, cache: Path, jobs: int, release: str, no_cache: bool) -> Measured:
    """One conversion by our console script into a fresh `out`."""
    shutil.rmtree(out, ignore_errors=True)
    command = [str(TOOL), "-i", str(corpus), "-o", str(out), "-q", "-v", release, "--cache-dir", str(cache)]
    command += ["-j", str(jobs)] + (["--no-cache"] if no_cache else [])
    result = measure(command)
    # 1 is "some files could not be converted", but also an uncaught exception's status
    if result.code not in (0, 1) or not (out / f"{corpus.name}_msft").is_dir():
        raise SystemExit(f"{shlex.join(command)} exited {result.code} without its output:\n{result.tail}")
    return result


def theirs(msft_dir: Path, python: str, corpus: Path, out: Path, release: str) -> tuple[str, Measured, int]:
    """One conversion by msFmkTransplt (the shown command, the measurement, .py files written)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    command = [python, "ms_fmk_transplt.py", "-i", str(corpus), "-o", str(out), "-v", release]
    env = dict(os.environ, PYTHONPATH=str(msft_dir), PYTHONDONTWRITEBYTECODE="1")
    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env[key] = DEAD_PROXY  # it makes no network calls; make sure of it
    shown = f"cd {shlex.quote(str(msft_dir))} && PYTHONPATH={shlex.quote(str(msft_dir))} {shlex.join(command)} </dev/null"
    result = measure(command, cwd=msft_dir, env=env)
    written = out / f"{corpus.name}_msft"
    produced = sum(1 for _ in written.rglob("*.py")) if written.is_dir() else 0
    return shown, result, produced


def _row(name: str, label: str, files: int, lines: int, result: Measured, extra: str = "") -> None:
    print(
        f"| {name:<22} | {label:<24} | {files:>6,} | {lines:>9,} | {result.wall:>8.2f} | {result.cpu:>8.2f}"
        f" | {lines / result.wall:>8,.0f} | {result.peak / 2**20:>7.0f} | {extra:>11} |",
        flush=True,
    )


def measure_corpus(
    name: str,
    corpus: Path,
    work: Path,
    jobs: int,
    release: str,
    kinds: list[str],
    validate: bool = False,
    repeat: int = 1,
) -> tuple[int, int, Measured | None]:
    """One row per run kind; returns files, lines and the -j N no-cache run (for theirs/ours).

    `repeat`: the no-cache kinds (which leave nothing behind for the next run) run that many times
    and their row is the run of median wall time, the others' times listed under it."""
    files, lines = count(corpus)
    cache = work / "cache" / name.replace(" ", "_")
    shutil.rmtree(cache, ignore_errors=True)
    # each run into a folder of its own, all removed once the corpus is done: removing the last
    # run's ~2,000 files just before a run made that run pay for the file system's deferred work
    # (ext4 here, mounted with discard): a warm transformers run took 0.7-1.7 s of system time
    # after such a removal against ~0.4 s without one, the same before and after a change
    outs = work / "out"
    shutil.rmtree(outs, ignore_errors=True)
    reference = None
    if {"warm", "edit"} & set(kinds):
        kinds = [*kinds, "cold"]  # warm and edited runs need the cache a cold run fills
    for kind in RUN_KINDS:
        if kind not in kinds:
            continue
        label = {
            "nocache1": "-j 1, no cache",
            "nocacheN": f"-j {jobs}, no cache",
            "cold": f"-j {jobs}, cold cache",
            "warm": f"-j {jobs}, warm cache",
            "edit": f"-j {jobs}, one file edited",
        }[kind]
        out = outs / kind
        if kind == "edit":
            edited = sorted(corpus.rglob("*.py"))[0]
            original = edited.read_bytes()
            edited.write_bytes(original + b"\nimport torch\n_bench = torch.ones(1).cuda()\n")
            try:
                result = ours(corpus, out, cache, jobs, release, no_cache=False)
            finally:
                edited.write_bytes(original)
        elif kind.startswith("nocache"):
            runs = sorted(
                (
                    ours(corpus, out, cache, 1 if kind == "nocache1" else jobs, release, True)
                    for _ in range(repeat)
                ),
                key=lambda run: run.wall,
            )
            result = runs[len(runs) // 2]
        else:
            result = ours(corpus, out, cache, jobs, release, no_cache=False)
        if kind == "nocacheN":
            reference = result
        _row(name, label, files, lines, result)
        if kind.startswith("nocache") and repeat > 1:
            walls = ", ".join(f"{run.wall:.2f}" for run in runs)
            print(f"  {repeat} runs, wall s: {walls} (the median's row above)", flush=True)
        if validate:
            problems, summary = check_reports.check(out / f"{corpus.name}_msft")
            print(f"  reports of that run: {summary}; " + ("; ".join(problems) or "valid"), flush=True)
    shutil.rmtree(outs, ignore_errors=True)
    return files, lines, reference


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench_scale"))
    parser.add_argument(
        "--corpus", action="append", choices=sorted(PREPARE), help="named corpus (repeatable; default timm)"
    )
    parser.add_argument(
        "--corpus-dir", action="append", type=Path, default=[], help="any folder (repeatable)"
    )
    parser.add_argument("--copies", type=int, default=1, help="copies of timm+transformers in 'generated'")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="N of the -j N runs")
    parser.add_argument("-v", "--release", default="2.1.0", help="-v for both tools (default 2.1.0)")
    parser.add_argument(
        "--runs",
        default=",".join(RUN_KINDS),
        help=f"comma list of run kinds (default all: {','.join(RUN_KINDS)})",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each no-cache kind N times and show the median run (theirs/ours uses it)",
    )
    parser.add_argument(
        "--size-scaling",
        metavar="SIZES",
        help="also print seconds per MB of one generated file of each size in MB (e.g. 0.1,1,5)",
    )
    parser.add_argument(
        "--validate", action="store_true", help="read every report of each run back (bench/check_reports.py)"
    )
    parser.add_argument("--msft-src", type=Path, help="msFmkTransplt checkout (…/msfmktransplt/src)")
    parser.add_argument(
        "--msft-python", default="python3", help="interpreter with libcst pandas prettytable jedi"
    )
    parser.add_argument(
        "--msft-corpora",
        help="comma list of corpus labels for msFmkTransplt, or 'all' (default: the smallest)",
    )
    args = parser.parse_args(argv)
    kinds = args.runs.split(",")
    unknown = sorted(set(kinds) - set(RUN_KINDS))
    if unknown:
        parser.error(f"unknown run kind {', '.join(unknown)}; valid: {', '.join(RUN_KINDS)}")
    args.work.mkdir(parents=True, exist_ok=True)
    corpora = [(corpus_label(n, args.copies), PREPARE[n](args.work, args.copies)) for n in args.corpus or []]
    corpora += [(p.resolve().name, p.resolve()) for p in args.corpus_dir]
    if not corpora:
        corpora = [(corpus_label("timm", args.copies), prepare_timm(args.work))]
    msft_dir = find_msft_dir(args.msft_src) if args.msft_src else None
    msft_names: set[str] = set()
    if msft_dir is not None:
        if args.msft_corpora == "all":
            msft_names = {name for name, _ in corpora}
        elif args.msft_corpora:
            msft_names = set(args.msft_corpora.split(","))
            missing = msft_names - {name for name, _ in corpora}
            if missing:
                parser.error(
                    f"--msft-corpora {', '.join(sorted(missing))}: not among {[n for n, _ in corpora]}"
                )
        else:
            msft_names = {min(corpora, key=lambda item: count(item[1])[1])[0]}

    package = Path(importlib.util.find_spec("ms_fmk_transplt").origin).parent  # what TOOL imports
    compile_bytecode(sys.executable, package)
    if msft_dir is not None:
        compile_bytecode(args.msft_python, msft_dir)
    print(f"load: {os.getloadavg()}  cores: {os.cpu_count()}  release: -v {args.release}")
    print(f"bytecode written first: {package}" + (f", {msft_dir}" if msft_dir is not None else ""))
    print(f"ours: {TOOL} -i CORPUS -o OUT -q -v {args.release} --cache-dir C -j N [--no-cache]")
    header = (
        f"| {'corpus':<22} | {'run':<24} | {'files':>6} | {'lines':>9} | {'wall s':>8} | {'cpu s':>8}"
        f" | {'lines/s':>8} | {'peak MB':>7} | {'theirs/ours':>11} |"
    )
    print(header)
    print(
        "|"
        + "|".join(
            "-" * (len(c) - 1) + (":" if i > 1 else "-") for i, c in enumerate(header.split("|")[1:-1])
        )
        + "|"
    )
    failures = []
    for name, corpus in corpora:
        wanted = list(kinds)
        if name in msft_names and "nocacheN" not in wanted:
            wanted.append("nocacheN")  # the reference of theirs/ours
        files, lines, reference = measure_corpus(
            name, corpus, args.work, args.jobs, args.release, wanted, args.validate, max(1, args.repeat)
        )
        if name in msft_names and msft_dir is not None and reference is not None:
            shown, result, produced = theirs(
                msft_dir, args.msft_python, corpus, args.work / "out_msft", args.release
            )
            ok = result.code == 0 and produced > 0
            ratio = f"{result.wall / reference.wall:.1f}x" if ok else "FAILED"
            _row(name, "msFmkTransplt", files, lines, result, ratio)
            print(f"  $ {shown}  (rc {result.code}, {produced} .py written)", flush=True)
            if not ok:
                failures.append(f"{name}: msFmkTransplt rc={result.code} py={produced}: {result.tail}")
            shutil.rmtree(args.work / "out_msft", ignore_errors=True)
    if args.size_scaling:
        print(
            f"\nseconds per MB of one file ({shlex.join(['bench/size_scaling.py', '--sizes', args.size_scaling])}):"
        )
        script = Path(__file__).resolve().parent / "size_scaling.py"
        done = subprocess.run([sys.executable, str(script), "--sizes", args.size_scaling], check=False)
        if done.returncode:
            failures.append(f"size_scaling.py exited {done.returncode}")
    print(f"load: {os.getloadavg()}")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
