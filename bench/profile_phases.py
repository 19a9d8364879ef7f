#!/usr/bin/env python3
"""Where a conversion's CPU time goes: per-phase CPU seconds of converting a folder in one process.

The conversion of every ``.py`` file is done step by step exactly as
``ms_fmk_transplt.engine.conversion.convert._convert`` does it, with a CPU clock (``time.process_time``)
around each step; ``--check`` also converts each file with the real ``convert_source`` and stops
if a result differs, so the mirror cannot drift from the engine unnoticed. Added to the table:

* start-up: ``python -X importtime`` of the CLI converting a one-file folder (every module it
  imports, the xlsx writer included; wall microseconds as CPython reports them), and the
  wall time of that whole process;
* rules: loading + validating + compiling the built-in rules (what a cold cache pays);
* reports: each writer of ``ms_fmk_transplt.run.REPORTS`` on the run result of this folder.

Non-Python files (copied, text-scanned) are left out.

    .venv/bin/python bench/profile_phases.py /tmp/ex
    .venv/bin/python bench/profile_phases.py sample_models --check --no-startup
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from ms_fmk_transplt import data as release_data
from ms_fmk_transplt.discover import TreeEntryKind, discover
from ms_fmk_transplt.engine.conversion import ModuleRewriter, convert_source, fast_path
from ms_fmk_transplt.engine.conversion.convert import (
    _decode_problem,
    _parse_normalised,
    _place,
    _syntax_problem,
    counted,
    edited,
    in_original,
    unparsable_output,
)
from ms_fmk_transplt.engine.conversion.normalise import (
    LONE_BACKSLASH,
    libcst_limit,
    normalise,
    restore,
    same_tree,
)
from ms_fmk_transplt.engine.importing import add_needed_imports
from ms_fmk_transplt.engine.interface import Tables
from ms_fmk_transplt.engine.reporting import annotate
from ms_fmk_transplt.engine.syntax import module_bytes, parse_module, transform
from ms_fmk_transplt.records import FileResult, RunResult, Status
from ms_fmk_transplt.ruleset import compile_rules, load_rules
from ms_fmk_transplt.run import REPORTS, _rule_table

# the conversion phases, in the order _convert runs them
PHASES = (
    "read",
    "decode check",
    "CPython ast.parse",
    "prefilter (could_match)",
    "fast path (ast classification)",
    "libcst parse",
    "ModuleRewriter init (look-ahead)",
    "transform",
    "imports",
    "positions (_place)",
    "suppressions, fingerprints",
    "codegen (edited modules only: new statements)",
    "output check (fresh statements parse)",
    "restore (normalised files)",
)


@dataclass
class Clock:
    """CPU seconds per phase, summed over files."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.process_time()
        try:
            yield
        finally:
            self.seconds[name] += time.process_time() - start


def convert_timed(path: str, data: bytes, tables: Tables, clock: Clock) -> FileResult:
    """`engine.convert._convert`, step for step, each step on `clock`."""
    with clock.phase("decode check"):
        problem = _decode_problem(data)
    if problem:
        return FileResult(path, Status.FAILED, reason=problem)
    with clock.phase("CPython ast.parse"):
        tree = _syntax_problem(data)
    if isinstance(tree, str):
        return FileResult(path, Status.FAILED, reason=tree)
    with clock.phase("prefilter (could_match)"):
        could = tables.could_match(data)
    if not could:
        return FileResult(path, Status.UNCHANGED)
    with clock.phase("fast path (ast classification)"):
        fast = None if tables.could_rewrite(data) else fast_path.classify(path, data, tree, tables)
    if fast is not None:
        return fast
    del tree
    normalised = None
    problem = ""
    with clock.phase("libcst parse"):
        try:
            module: cst.Module | None = parse_module(data)
            if (b"\f" in data or LONE_BACKSLASH.search(data)) and module is not None and module.bytes != data:
                module = None
        except cst.ParserSyntaxError as exc:
            module, problem = None, f"syntax error at line {exc.raw_line}: {exc.message}"
        if module is None:
            normalised = normalise(data)
            module = _parse_normalised(normalised, data) if normalised is not None else None
    if module is None:
        reason = libcst_limit(data) or problem or "libcst does not print the file back as it read it"
        return FileResult(path, Status.FAILED, reason=f"{reason} (libcst; CPython parses it)")
    with clock.phase("ModuleRewriter init (look-ahead)"):
        converter = ModuleRewriter(tables, module)
    with clock.phase("transform"):
        new_module = transform(module, converter)
    with clock.phase("imports"):
        new_module = add_needed_imports(new_module, converter.import_statements.needed)
    with clock.phase("positions (_place)"):
        placed, text = _place(module, converter)
    with clock.phase("suppressions, fingerprints"):
        findings = annotate(in_original(placed, normalised), data)
    with clock.phase("codegen (edited modules only: new statements)"):
        fresh: list[str] | None = None
        if normalised is not None:
            output = new_module.bytes
        else:
            output, fresh = module_bytes(module, new_module, text) if edited(converter) else (data, None)
    if output != data:
        with clock.phase("output check (fresh statements parse)"):
            broken = unparsable_output(output, fresh)
        if broken:
            return FileResult(path, Status.FAILED, reason=broken)
    if normalised is not None:
        with clock.phase("restore (normalised files)"):
            restored = restore(normalised, output)
            same = restored is not None and same_tree(restored, output)
        if restored is None or not same:
            return FileResult(
                path,
                Status.FAILED,
                reason=f"{libcst_limit(data)}: converted as normalised, but the output could not be given"
                " back the original bytes line for line (libcst; CPython parses it)",
            )
        output = restored
    if output == data:
        return FileResult(path, Status.UNCHANGED, findings=findings, **counted(converter))
    return FileResult(path, Status.CONVERTED, findings=findings, output=output, **counted(converter))


@dataclass
class Profile:
    """Rows of (phase, CPU seconds) plus what they were measured on."""

    folder: Path
    files: int
    lines: int
    conversion: dict[str, float]
    setup: dict[str, float]
    reports: dict[str, float]
    statuses: dict[str, int]


def profile(folder: Path, release: str, check: bool = False) -> Profile:
    """Convert every .py file under `folder` in this process, timing each phase."""
    setup: dict[str, float] = {}
    start = time.process_time()
    rules = load_rules()
    tables = compile_rules(rules, release=release)
    setup["rules: load, validate, compile"] = time.process_time() - start
    clock = Clock()
    results: list[FileResult] = []
    lines = 0
    for entry in discover(folder):
        if entry.kind is not TreeEntryKind.PYTHON or entry.excluded:
            continue
        with clock.phase("read"):
            data = entry.path.read_bytes()
        lines += data.count(b"\n")
        result = convert_timed(entry.rel, data, tables, clock)
        if check:
            expected = convert_source(entry.rel, data, tables)
            if expected != result:
                raise SystemExit(f"{entry.rel}: the timed mirror of _convert differs from convert_source")
        results.append(result)
    run = RunResult(
        input_root=str(folder),
        output_root=str(folder.name) + "_msft",
        files=tuple(results),
        release=release,
        rules=_rule_table(rules),
    )
    reports: dict[str, float] = {}
    for name, writer in REPORTS.items():
        start = time.process_time()
        writer(run)
        reports[name] = time.process_time() - start
    statuses: dict[str, int] = {}
    for result in results:
        statuses[result.status.value] = statuses.get(result.status.value, 0) + 1
    return Profile(folder, len(results), lines, clock.seconds, setup, reports, statuses)


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def startup(tool: Path, release: str) -> tuple[float, float, list[tuple[str, float]]]:
    """(wall s of the process, import s in total, top-level imports by cumulative s) of the CLI
    converting a one-file folder, from `python -X importtime`."""
    with tempfile.TemporaryDirectory(prefix="profile_startup_") as tmp:
        source = Path(tmp) / "one"
        source.mkdir()
        (source / "train.py").write_text("import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n")
        command = [sys.executable, "-X", "importtime", str(tool), "-i", str(source), "-o", f"{tmp}/out"]
        command += ["-q", "--no-cache", "-v", release]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-400:]}")
    total, top = 0.0, []
    for line in done.stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match and len(match.group(3)) == 1:  # top level: one space after the bar
            cumulative = int(match.group(2)) / 1e6
            total += cumulative
            top.append((match.group(4), cumulative))
    top.sort(key=lambda item: -item[1])
    return wall, total, top


def table(result: Profile, start: tuple[float, float, list[tuple[str, float]]] | None) -> str:
    """The profile as a markdown table: section, phase, CPU s, share of the conversion."""
    converting = sum(result.conversion.values())
    rows: list[tuple[str, str, float, str]] = []
    if start is not None:
        wall, imports, top = start
        rows.append(("start-up", "CLI process on a one-file folder (wall)", wall, ""))
        rows.append(("start-up", "all imports (-X importtime, wall)", imports, ""))
        for name, seconds in top[:6]:
            rows.append(("start-up", f"  import {name}", seconds, ""))
    for name, seconds in result.setup.items():
        rows.append(("setup", name, seconds, ""))
    for name in PHASES:
        seconds = result.conversion[name]
        rows.append(("convert", name, seconds, f"{100 * seconds / converting:.1f} %" if converting else ""))
    rows.append(("convert", "total", converting, "100 %"))
    for name, seconds in result.reports.items():
        rows.append(("reports", name, seconds, ""))
    rows.append(("reports", "total", sum(result.reports.values()), ""))
    out = ["| part | phase | CPU s | share |", "|---|---|---:|---:|"]
    out += [f"| {part} | {phase} | {seconds:.3f} | {share} |" for part, phase, seconds, share in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None, print_: Callable[[str], object] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("-v", "--release", default="2.1.0", help="Ascend release data (default 2.1.0)")
    parser.add_argument("--check", action="store_true", help="also compare each result with convert_source")
    parser.add_argument("--no-startup", action="store_true", help="skip the -X importtime start-up run")
    parser.add_argument(
        "--tool", type=Path, default=Path(sys.executable).with_name("ms_fmk_transplt"), help="console script"
    )
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"not a folder: {args.folder}")
    if args.release not in release_data.releases():
        parser.error(f"unknown release {args.release}; shipped: {', '.join(release_data.releases())}")
    print_(
        f"load: {os.getloadavg()}  cores: {os.cpu_count()}  folder: {args.folder}  release: {args.release}"
    )
    start = None if args.no_startup else startup(args.tool, args.release)
    result = profile(args.folder, args.release, check=args.check)
    print_(f"files: {result.files}  lines: {result.lines:,}  results: {result.statuses}")
    print_(table(result, start))
    print_(f"load: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
