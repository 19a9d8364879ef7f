#!/usr/bin/env python3
"""Regression oracle on real code: convert corpora with a base revision and with the working tree,
and print every difference in the converted files and the change log.

Each difference should be an intended fix; an empty report means the change is neutral on that
code. The base revision is taken with ``git archive`` into a temporary folder and run with this
venv's Python, so both sides use the same torch and libcst. Corpora are folders you fetch (not
committed), e.g. the pytorch/examples mirror::

    git clone -q https://github.com/pytorch/examples /tmp/ex
    .venv/bin/python bench/compare_revisions.py --base main /tmp/ex /tmp/nanoGPT

Runs use ``--no-cache -q``; report.json, the xlsx/csv reports and the log's output path and
timing lines are left out of the comparison.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"report.json"}
SKIP_SUFFIXES = (".xlsx", ".csv")
VOLATILE = ("output:", "seconds:")


def _convert(corpus: Path, out: Path, pythonpath: Path | None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    command = [sys.executable, "-m", "ms_fmk_transplt", "-i", str(corpus), "-o", str(out), "-q", "--no-cache"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=out.parent)
    if done.returncode not in (0, 1):  # 1: some files failed, which the log then names
        raise SystemExit(f"conversion of {corpus} failed ({done.returncode}): {done.stderr[-2000:]}")


def _files(root: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(root)): p
        for p in root.rglob("*")
        if p.is_file() and p.name not in SKIP and not p.name.endswith(SKIP_SUFFIXES)
    }


def _lines(path: Path) -> list[str]:
    text = path.read_bytes().decode("utf-8", errors="replace").splitlines(keepends=True)
    if path.name == "msFmkTranspltlog.txt":
        text = [line for line in text if not line.lstrip().startswith(VOLATILE)]
    return text


def compare(base: Path, head: Path) -> list[str]:
    """Unified diffs of every file that differs between the two output trees."""
    before, after = _files(base), _files(head)
    out: list[str] = []
    for name in sorted(before.keys() | after.keys()):
        if name not in before or name not in after:
            out.append(f"only in {'head' if name in after else 'base'}: {name}\n")
            continue
        a, b = _lines(before[name]), _lines(after[name])
        if a != b:
            out.extend(difflib.unified_diff(a, b, f"base/{name}", f"head/{name}"))
    return out


def main() -> int:
    """Convert each corpus with both revisions and print the differences; 1 when there are any."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+", type=Path)
    parser.add_argument("--base", default="main", help="git revision to compare against (default main)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compare_revisions_") as tmp:
        work = Path(tmp)
        base_src = work / "base_revision"
        base_src.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.base], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(base_src)], input=archive.stdout, check=True)
        # the editable install maps the built-in rules package to the working tree: point it at the base's
        link = base_src / "ms_fmk_transplt" / "builtin_rules"
        if not link.exists():
            link.symlink_to(base_src / "rules" / "builtin")
        differences = 0
        for corpus in args.corpora:
            corpus = corpus.resolve()
            base_out, head_out = work / "base" / corpus.name, work / "head" / corpus.name
            _convert(corpus, base_out, base_src)
            _convert(corpus, head_out, None)
            diff = compare(base_out, head_out)
            differences += bool(diff)
            print(f"== {corpus}: {'no differences' if not diff else 'differences'}")
            sys.stdout.writelines(diff)
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
