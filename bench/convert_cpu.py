#!/usr/bin/env python3
"""Conversion CPU of a folder in one process: every .py file converted with the engine's per-file
API, as the tool's workers convert it (the pipeline's relaxed cyclic GC, paused while a file
converts), best of --runs, in process CPU seconds. On a shared machine whole runs' wall times
measure the machine's queue; this is the figure to compare between two checkouts, alternated::

    PYTHONPATH=WORKTREE .venv/bin/python bench/convert_cpu.py FOLDER [--runs 4] [--label NAME]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # a worktree given by PYTHONPATH stays first
    sys.path.append(str(ROOT))


def conversion_cpu(folder: Path, runs: int) -> tuple[int, int, float]:
    """(files, lines, best CPU seconds of `runs`) for converting every .py file under `folder`."""
    from ms_fmk_transplt.engine.conversion import convert_source
    from ms_fmk_transplt.pipeline import _collector_paused, _relaxed_gc
    from ms_fmk_transplt.ruleset import compile_rules, load_rules

    tables = compile_rules(load_rules())
    files = [(str(path.relative_to(folder)), path.read_bytes()) for path in sorted(folder.rglob("*.py"))]
    best = float("inf")
    with _relaxed_gc():
        for _ in range(runs):
            start = time.process_time()
            for rel, data in files:
                with _collector_paused():
                    convert_source(rel, data, tables)
            best = min(best, time.process_time() - start)
    return len(files), sum(data.count(b"\n") for _, data in files), best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--label", default="", help="a name printed first (e.g. base, branch)")
    args = parser.parse_args(argv)
    files, lines, best = conversion_cpu(args.folder, args.runs)
    print(
        f"{args.label or args.folder.name}: {files} files, {lines:,} lines, conversion CPU best of "
        f"{args.runs}: {best:.3f} s ({lines / max(best, 1e-9):,.0f} lines/s), load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
