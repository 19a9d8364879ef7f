#!/usr/bin/env python3
"""The ast fast path against libcst on whole corpora: same results, and what it saves.

Every Python file of each corpus is converted twice with the engine's per-file API: with the
fast path (a file no rewrite rule can touch is classified on CPython's ast, engine/conversion/fast_path.py)
and without it (every file through libcst). It prints, per corpus, how many files took the fast
path, how many fell back to libcst, whether every FileResult is equal (findings, positions,
counts, output), and the CPU seconds of both runs; every difference is listed::

    .venv/bin/python bench/fast_path.py /tmp/ic/ex /tmp/ic/timm /tmp/transformers/src

Corpora are folders of a checkout (`git clone https://github.com/pytorch/examples /tmp/ic/ex`);
nothing from them is committed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from ms_fmk_transplt.engine.conversion import convert_source, fast_path
    from ms_fmk_transplt.ruleset import compile_rules, load_rules

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="+", type=Path)
    parser.add_argument("--show", type=int, default=10, help="differences listed per corpus")
    args = parser.parse_args()
    tables = compile_rules(load_rules())
    taken = {"fast": 0, "fallback": 0}
    original = fast_path.classify

    def counting(*a: object, **k: object) -> object:
        result = original(*a, **k)  # type: ignore[arg-type]
        taken["fast" if result is not None else "fallback"] += 1
        return result

    fast_path.classify = counting  # type: ignore[assignment]
    print("| corpus | files | lines | fast path | fell back | differences | fast s | libcst s | saved |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    total_differences = 0
    for corpus in args.corpora:
        files = sorted(p for p in corpus.rglob("*.py") if p.is_file())
        taken.update(fast=0, fallback=0)
        fast_s = slow_s = 0.0
        lines = 0
        differences: list[str] = []
        for path in files:
            data = path.read_bytes()
            lines += data.count(b"\n")
            rel = path.relative_to(corpus).as_posix()
            start = time.process_time()
            quick = convert_source(rel, data, tables)
            middle = time.process_time()
            full = convert_source(rel, data, tables, fast=False)
            end = time.process_time()
            fast_s += middle - start
            slow_s += end - middle
            if quick != full:
                differences.append(_difference(rel, quick, full))
        total_differences += len(differences)
        saved = 1 - fast_s / slow_s if slow_s else 0.0
        print(
            f"| {corpus.name} | {len(files):,} | {lines:,} | {taken['fast']:,} | {taken['fallback']:,} "
            f"| {len(differences)} | {fast_s:.2f} | {slow_s:.2f} | {saved:.0%} |"
        )
        for line in differences[: args.show]:
            print("   ", line)
    return 1 if total_differences else 0


def _difference(rel: str, quick: object, full: object) -> str:
    a = getattr(quick, "findings", ())
    b = getattr(full, "findings", ())
    for x, y in zip(a, b):
        if x != y:
            return f"{rel}: fast {x} != libcst {y}"
    if len(a) != len(b):
        return f"{rel}: {len(a)} findings on the fast path, {len(b)} on libcst's"
    return f"{rel}: fast {quick!r:.300} != libcst {full!r:.300}"


if __name__ == "__main__":
    sys.exit(main())
