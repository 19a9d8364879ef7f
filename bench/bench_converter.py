#!/usr/bin/env python3
"""Side-by-side conversion benchmark: ms_fmk_transplt (ours) vs Huawei msFmkTransplt (theirs).

Each tool converts each corpus N times, every run into a fresh temporary output folder, as a
separate process started the way a user starts it:

* ours:   ``<venv>/bin/ms_fmk_transplt -i CORPUS -o TMP -q -v RELEASE [-j JOBS]``
* theirs: ``cd MSFT_DIR && PYTHONPATH=MSFT_DIR MSFT_PYTHON ms_fmk_transplt.py -i CORPUS -o TMP -v RELEASE``
  (stdin is /dev/null, so any interactive prompt makes it fail instead of hanging; the run is
  reported as failed).  Theirs only runs when ``--msft-src`` is given; nothing of it lives here.

Measured per run: wall-clock seconds, CPU seconds (user+sys of the whole process tree that was
reaped) and peak RSS (``ru_maxrss`` from ``os.wait4``: the largest single process in the tree,
not a sum over worker processes).  The table reports medians, files/s = .py files / median wall,
and ratio = theirs median wall / ours median wall (>1 means ours is faster).

Corpora (defaults): /tmp/pytorch_examples, <repo>/sample_models and a synthetic
pytorch_examples x10 corpus (ten copies in separate sub-folders) built under /tmp on first use.

Examples::

    .venv/bin/python bench/bench_converter.py                      # ours only, ~2-3 min
    .venv/bin/python bench/bench_converter.py --runs 1 --jobs 1 --jobs 2
    .venv/bin/python bench/bench_converter.py \\
        --msft-src /tmp/msft/msfmktransplt/src --msft-python /tmp/msft-venv/bin/python \\
        --msft-corpora pytorch_examples,sample_models --msft-runs 1
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_EXAMPLES = Path("/tmp/pytorch_examples")
DEFAULT_SYNTH_ROOT = Path("/tmp/bench_corpus")


@dataclass
class Corpus:
    name: str
    path: Path
    files: int = 0
    lines: int = 0


@dataclass
class Result:
    corpus: str
    tool: str
    cmd: list[str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_kb: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    out_py: int = 0


def count_corpus(path: Path) -> tuple[int, int]:
    files = lines = 0
    for p in path.rglob("*.py"):
        if p.is_file() and not p.is_symlink():
            files += 1
            with open(p, "rb") as fh:
                lines += sum(1 for _ in fh)
    return files, lines


def build_synthetic(src: Path, root: Path, copies: int) -> Path:
    """Replicate ``src`` ``copies`` times into root/<src.name>_x<copies>/copy_NN (idempotent)."""
    dst = root / f"{src.name}_x{copies}"
    stamp = dst / ".complete"
    if stamp.exists():
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for i in range(copies):
        shutil.copytree(src, dst / f"copy_{i:02d}", symlinks=True)
    stamp.write_text("ok\n")
    return dst


def run_once(
    cmd: list[str], cwd: Path | None, env: dict[str, str], timeout: float
) -> tuple[float, float, int, int, str]:
    """Run cmd, return (wall s, cpu s, peak rss KB, returncode, tail of output)."""
    log = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
    )
    deadline = t0 + timeout
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, ru = os.wait4(proc.pid, 0)
            break
        time.sleep(0.01)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    log.seek(0)
    tail = log.read().decode("utf-8", "replace")[-2000:]
    log.close()
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, proc.returncode, tail


def find_msft_dir(src: Path) -> Path:
    for cand in (
        src,
        src / "ms_fmk_transplt",
        src / "src" / "ms_fmk_transplt",
        src / "msfmktransplt" / "src" / "ms_fmk_transplt",
    ):
        if (cand / "ms_fmk_transplt.py").is_file():
            return cand.resolve()
    raise SystemExit(f"--msft-src {src}: no ms_fmk_transplt.py found")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="runs per (tool, corpus) for ours (default 3)")
    ap.add_argument(
        "--jobs",
        "-j",
        type=int,
        action="append",
        help="ours: value for -j (repeatable: one row per value); default: not passed (tool picks)",
    )
    ap.add_argument(
        "--release",
        default="2.1.0",
        help="target Ascend/PyTorch release passed as -v to both tools (default 2.1.0, the one both support)",
    )
    ap.add_argument(
        "--ours",
        default=str(Path(sys.executable).parent / "ms_fmk_transplt"),
        help="our console script (default: next to this interpreter)",
    )
    ap.add_argument(
        "--corpus",
        action="append",
        type=Path,
        help="corpus folder (repeatable); default: pytorch_examples, sample_models, pytorch_examples_x10",
    )
    ap.add_argument(
        "--examples", type=Path, default=DEFAULT_EXAMPLES, help="pytorch/examples checkout (93 .py files)"
    )
    ap.add_argument("--copies", type=int, default=10, help="copies in the synthetic corpus (0 = none)")
    ap.add_argument("--synth-root", type=Path, default=DEFAULT_SYNTH_ROOT)
    ap.add_argument("--msft-src", type=Path, help="existing msFmkTransplt checkout (…/msfmktransplt/src)")
    ap.add_argument("--msft-python", default="python3", help="interpreter with msFmkTransplt's dependencies")
    ap.add_argument(
        "--msft-runs",
        type=int,
        default=1,
        help="runs per corpus for theirs (default 1: it takes minutes per corpus)",
    )
    ap.add_argument(
        "--msft-corpora",
        default="pytorch_examples,sample_models",
        help="comma list of corpus names theirs runs on ('all' for every corpus)",
    )
    ap.add_argument("--timeout", type=float, default=1800, help="seconds before a run is killed")
    ap.add_argument("--json", type=Path, help="also write raw results as JSON here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary output folders")
    args = ap.parse_args()

    if not Path(args.ours).exists():
        ours_which = shutil.which("ms_fmk_transplt")
        if not ours_which:
            raise SystemExit(f"our console script not found: {args.ours}")
        args.ours = ours_which

    corpora: list[Corpus] = []
    if args.corpus:
        corpora = [Corpus(p.resolve().name, p.resolve()) for p in args.corpus]
    else:
        if args.examples.is_dir():
            corpora.append(Corpus(args.examples.name, args.examples.resolve()))
        corpora.append(Corpus("sample_models", REPO / "sample_models"))
        if args.examples.is_dir() and args.copies > 0:
            synth = build_synthetic(args.examples, args.synth_root, args.copies)
            corpora.append(Corpus(synth.name, synth))
    for c in corpora:
        c.files, c.lines = count_corpus(c.path)

    base_env = dict(os.environ)
    # keep both tools off the network and free of user site/proxy effects
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        base_env[k] = "http://127.0.0.1:9"
    base_env["PYTHONDONTWRITEBYTECODE"] = "1"

    tools: list[tuple[str, object]] = []
    for j in args.jobs or [None]:
        label = "ours" if j is None else f"ours -j{j}"
        tools.append((label, j))
    msft_dir = find_msft_dir(args.msft_src) if args.msft_src else None
    if msft_dir:
        tools.append(("msFmkTransplt", None))
        msft_set = None if args.msft_corpora == "all" else set(args.msft_corpora.split(","))

    print(f"# host: {os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f}")
    results: list[Result] = []
    for c in corpora:
        for label, j in tools:
            is_msft = label == "msFmkTransplt"
            if is_msft and msft_set is not None and c.name not in msft_set:
                continue
            runs = args.msft_runs if is_msft else args.runs
            res = None
            for _ in range(runs):
                out = Path(tempfile.mkdtemp(prefix=f"bench_{'msft' if is_msft else 'ours'}_", dir="/tmp"))
                if is_msft:
                    cmd = [
                        args.msft_python,
                        str(msft_dir / "ms_fmk_transplt.py"),
                        "-i",
                        str(c.path),
                        "-o",
                        str(out),
                        "-v",
                        args.release,
                    ]
                    env = dict(base_env, PYTHONPATH=str(msft_dir))
                    cwd = msft_dir
                else:
                    cmd = [args.ours, "-i", str(c.path), "-o", str(out), "-q", "-v", args.release]
                    if j is not None:
                        cmd += ["-j", str(j)]
                    env, cwd = base_env, None
                if res is None:
                    res = Result(c.name, label, cmd)
                    shown = " ".join(shlex.quote(x) for x in cmd).replace(str(out), "$FRESH_TMP")
                    prefix = (
                        f"cd {shlex.quote(str(cwd))} && PYTHONPATH={shlex.quote(str(msft_dir))} "
                        if is_msft
                        else ""
                    )
                    print(f"$ {prefix}{shown} </dev/null", flush=True)
                wall, cpu, rss, rc, tail = run_once(cmd, cwd, env, args.timeout)
                outdir = out / f"{c.path.name}_msft"
                n_out = sum(1 for _ in outdir.rglob("*.py")) if outdir.is_dir() else 0
                if rc != 0 or n_out == 0:
                    res.failures.append(f"rc={rc} out_py={n_out}: {tail[-400:]}")
                else:
                    res.wall.append(wall)
                    res.cpu.append(cpu)
                    res.rss_kb.append(rss)
                    res.out_py = n_out
                print(
                    f"  {c.name:<24} {label:<14} run wall={wall:7.2f}s cpu={cpu:7.2f}s rss={rss / 1024:6.0f}MB rc={rc}",
                    flush=True,
                )
                if not args.keep:
                    shutil.rmtree(out, ignore_errors=True)
            if res is not None:
                results.append(res)

    # ---- table
    by_corpus = {c.name: c for c in corpora}
    ours_med: dict[tuple[str, str], float] = {}
    for r in results:
        if r.wall and r.tool.startswith("ours"):
            ours_med[(r.corpus, r.tool)] = statistics.median(r.wall)
    hdr = f"| {'corpus':<24} | {'files':>5} | {'lines':>6} | {'tool':<14} | {'runs':>4} | {'median s':>8} | {'cpu s':>7} | {'peak RSS MB':>11} | {'files/s':>7} | {'theirs/ours':>11} |"
    print()
    print(f"# load average at end {os.getloadavg()[0]:.2f}; release -v {args.release}")
    print(hdr)
    print("|" + "|".join("-" * (len(x)) for x in hdr.split("|")[1:-1]) + "|")
    for r in results:
        c = by_corpus[r.corpus]
        if not r.wall:
            print(
                f"| {r.corpus:<24} | {c.files:>5} | {c.lines:>6} | {r.tool:<14} | {0:>4} | {'FAILED':>8} | {'':>7} | {'':>11} | {'':>7} | {'':>11} |"
            )
            continue
        med = statistics.median(r.wall)
        cpu = statistics.median(r.cpu)
        rss = max(r.rss_kb) / 1024
        ratio = ""
        if r.tool == "msFmkTransplt":
            ours_rows = [v for (cn, _), v in ours_med.items() if cn == r.corpus]
            if ours_rows:
                ratio = f"{med / min(ours_rows):.1f}x"
        print(
            f"| {r.corpus:<24} | {c.files:>5} | {c.lines:>6} | {r.tool:<14} | {len(r.wall):>4} | {med:>8.2f} | {cpu:>7.2f} | {rss:>11.0f} | {c.files / med:>7.1f} | {ratio:>11} |"
        )
    failed = [r for r in results if r.failures]
    for r in failed:
        print(f"\n{r.corpus} / {r.tool}: {len(r.failures)} failed run(s); first: {r.failures[0]}")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
