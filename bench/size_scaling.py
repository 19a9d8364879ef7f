#!/usr/bin/env python3
"""Is conversion cost linear in file size? Seconds per MB for generated 0.1, 1 and 5 MB files.

Each file is the sample models' training scripts (sample_models/*/*.py, CUDA code that the
converter rewrites) repeated until it reaches the size, every copy's top-level names suffixed so
the module stays one valid program. Each size is converted with the engine's per-file API
(`convert_source`) in this process, best of --runs, and printed as seconds, MB/s and s/MB; a
flat s/MB column is linear cost. Files convert as the tool converts them: the pipeline's relaxed
cyclic GC, paused while a file converts (``--gc default`` for Python's own collector)::

    .venv/bin/python bench/size_scaling.py [--sizes 0.1,1,5] [--runs 2] [--gc relaxed|default]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _copy(source: str, suffix: str) -> str:
    """The module with every top-level def, class and assigned name renamed `<name>_<suffix>`."""
    tree = ast.parse(source)
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.Name:
            if node.id in names:
                node.id = f"{node.id}_{suffix}"
            return node

        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
            if node.name in names:
                node.name = f"{node.name}_{suffix}"
            self.generic_visit(node)
            return node

        def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
            if node.name in names:
                node.name = f"{node.name}_{suffix}"
            self.generic_visit(node)
            return node

    return ast.unparse(Rename().visit(tree)) + "\n"


def generated(size: int) -> bytes:
    scripts = [p.read_text() for p in sorted((ROOT / "sample_models").glob("*/*.py"))]
    parts = ["import torch\nimport torch.nn as nn\n"]
    total, copy = 0, 0
    while total < size:
        for script in scripts:
            text = _copy(script, f"c{copy}")
            parts.append(text)
            total += len(text.encode())
            copy += 1
            if total >= size:
                break
    return "".join(parts).encode()


def main() -> None:
    from ms_fmk_transplt.engine.conversion import convert_source
    from ms_fmk_transplt.ruleset import compile_rules, load_rules

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0.1,1,5", help="file sizes in MB, comma-separated")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--gc", choices=("relaxed", "default"), default="relaxed")
    args = parser.parse_args()
    from ms_fmk_transplt.pipeline import _collector_paused, _relaxed_gc

    @contextlib.contextmanager
    def as_the_tool() -> Iterator[None]:
        with _relaxed_gc(), _collector_paused():
            yield

    collector = as_the_tool if args.gc == "relaxed" else contextlib.nullcontext
    tables = compile_rules(load_rules())
    print(
        "| size MB | lines | status | findings | seconds | MB/s | s/MB |\n|---:|---:|---|---:|---:|---:|---:|"
    )
    for size in (float(s) for s in args.sizes.split(",")):
        data = generated(int(size * 1_000_000))
        best = float("inf")
        result = None
        for _ in range(args.runs):
            with collector():
                start = time.perf_counter()
                result = convert_source("generated.py", data, tables)
                best = min(best, time.perf_counter() - start)
        assert result is not None
        mb = len(data) / 1e6
        lines = data.count(b"\n")
        print(
            f"| {mb:.2f} | {lines:,} | {result.status.value} | {len(result.findings):,} "
            f"| {best:.2f} | {mb / best:.2f} | {best / mb:.2f} |"
        )


if __name__ == "__main__":
    main()
