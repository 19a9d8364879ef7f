"""One conversion run, start to end: validate, discover, convert, write, report, commit.

This is what the CLI calls; it raises UsageError for anything the user must fix and never
leaves a half-written output folder behind.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ms_fmk_transplt import data, reports
from ms_fmk_transplt.cache import ResultCache, default_cache_dir, rule_set_key
from ms_fmk_transplt.discover import discover
from ms_fmk_transplt.model import RunResult
from ms_fmk_transplt.pipeline import Progress, Staging, StreamWriter, convert_entries, write_tree
from ms_fmk_transplt.rules import RuleFileError, compile_rules, load_rules

LOG_NAME = "msFmkTranspltlog.txt"
REPORTS: dict[str, Callable[[RunResult], bytes]] = {
    LOG_NAME: reports.log_text,
    "change_list.csv": reports.change_list_csv,
    "unsupported_op.xlsx": reports.unsupported_xlsx,
    "report.json": reports.summary_json,
}


class UsageError(Exception):
    """Bad command-line input; str() is the one-line message."""


@dataclass
class Options:
    source: Path
    output: Path
    rule_files: Sequence[Path] = ()
    release: str | None = None
    force: bool = False
    jobs: int = 0
    opt_ins: Sequence[str] = ()
    cache_dir: Path | None = None  # None: default_cache_dir()
    use_cache: bool = True


def output_folder(source: Path, output: Path) -> Path:
    """OUT/<name>_msft, <name> being the input folder's name or the input file's stem."""
    resolved = source.resolve()
    name = resolved.stem if resolved.is_file() else resolved.name
    return output / f"{name}_msft"


def _check_paths(options: Options) -> Path:
    source, output = options.source, options.output
    if not source.exists() and not source.is_symlink():
        raise UsageError(f"input not found: {source}")
    if not (source.is_file() or source.is_dir()):
        raise UsageError(f"input is neither a file nor a directory: {source}")
    if output.exists() and not output.is_dir():
        raise UsageError(f"output is not a directory: {output}")
    final = output_folder(source, output)
    real_source, real_final = source.resolve(), final.resolve()
    if real_source == real_final or real_final in real_source.parents:
        raise UsageError(f"input {source} lies inside the output folder {final}")
    if (final.exists() or final.is_symlink()) and not options.force:
        raise UsageError(f"output folder already exists: {final} (use --force to replace it)")
    return final


def convert_project(options: Options, progress: Progress | None = None) -> RunResult:
    """Run a whole conversion; the result's files say what happened to each input path."""
    started = time.perf_counter()
    warnings: list[str] = []
    release = options.release or data.default_release()
    if release not in data.releases():
        raise UsageError(f"unknown release {release!r}; shipped: {', '.join(data.releases())}")
    try:
        rules = load_rules(options.rule_files, warnings=warnings)
        known = {r.params["opt_in"] for r in rules if r.params.get("opt_in")}
        unknown = sorted(set(options.opt_ins) - known)
        if unknown:
            raise UsageError(
                f"unknown --opt-in {', '.join(unknown)}; valid: {', '.join(sorted(known)) or 'none'}"
            )
        tables = compile_rules(rules, release=release, opt_ins=options.opt_ins)
    except RuleFileError as exc:
        raise UsageError(str(exc)) from None
    final = _check_paths(options)
    options.output.mkdir(parents=True, exist_ok=True)
    entries = discover(options.source, exclude=(options.output, final))
    cache = None
    if options.use_cache:
        rule_set = rule_set_key(options.rule_files, release, options.opt_ins)
        cache = ResultCache(options.cache_dir or default_cache_dir(), rule_set, warnings)
    staging = Staging(final, force=options.force)
    with staging as folder:
        sink = StreamWriter(entries, folder)
        results = convert_entries(
            entries, tables, jobs=options.jobs, progress=progress, cache=cache, sink=sink
        )
        taken = {e.rel for e in entries}
        write_tree(entries, results, folder, streamed=True)
        run = RunResult(
            input_root=str(options.source),
            output_root=str(final),
            files=tuple(results),
            rule_files=tuple(str(p) for p in options.rule_files),
            release=release,
            seconds=time.perf_counter() - started,
        )
        for name, writer in REPORTS.items():
            if name in taken:  # the project has a file of that name: keep it, rename the report
                stem, _, suffix = name.rpartition(".")
                warnings.append(f"input has a file named {name}; report written as {stem}.msft.{suffix}")
                name = f"{stem}.msft.{suffix}"
            (folder / name).write_bytes(writer(run))
        staging.commit()
    return dataclasses.replace(run, warnings=tuple(warnings))
