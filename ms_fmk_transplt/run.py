"""One conversion run, start to end: validate, discover, convert, write, report, commit.

This is what the CLI calls; it raises UsageError for anything the user must fix and never
leaves a half-written output folder behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import hashlib
import os
import pickle
import posixpath
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ms_fmk_transplt import data, reports
from ms_fmk_transplt.cache import ResultCache, default_cache_dir, rule_set_key
from ms_fmk_transplt.discover import (
    LOG_NAME,
    TreeEntry,
    apply_excludes,
    converted,
    discover,
    kept_aside,
    link_notes,
    no_python_notice,
    project_layout,
)
from ms_fmk_transplt.pipeline import Progress, Staging, StreamWriter, TableSource, map_files, write_tree
from ms_fmk_transplt.records import AdviceFact, FileResult, Finding, RunResult, Status
from ms_fmk_transplt.reports.pieces import Piece

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.interface import Rule, Tables

REPORTS: dict[str, Callable[[RunResult], bytes | bytearray]] = {
    LOG_NAME: reports.log_text,
    "change_list.csv": reports.change_list_csv,
    "unsupported_op.xlsx": reports.unsupported_xlsx,
    "report.json": reports.summary_json,
}
# Reports that are a function of the results alone (not of the output folder, the time taken or the
# warnings) are kept in the result cache and reused while the results they were written from are
# the same: a warm run writes each from what it kept. The xlsx and the CSV are kept whole; the log
# and report.json keep their bulk, the findings, and are written around it each run (as pieces:
# a large tree's report.json is hundreds of MB, and joining it to its header would copy it).
KEPT_REPORTS = frozenset({"unsupported_op.xlsx", "change_list.csv"})
# ... except that the xlsx's Summary names the folder its reports are in: kept per output folder
NAMES_OUTPUT = frozenset({"unsupported_op.xlsx"})
KEPT_PARTS: dict[
    str, tuple[Callable[[RunResult], bytearray], Callable[[RunResult, bytes | bytearray], tuple[Piece, ...]]]
] = {
    LOG_NAME: (reports.log_body, reports.log_around),
    "report.json": (reports.summary_body, reports.summary_around),
}


def _results_digest(run: RunResult, keyed: dict[str, tuple[Sequence[Finding], bytes]] | None = None) -> bytes:
    """What a kept report depends on: the results without converted bytes, timings or warnings.

    With `keyed` (ResultCache.keyed), a file's findings that are still the ones kept under a
    cache key are stood for by that key: a digest as sound, since a key decides its result, but
    not equal to the one of the findings' values (see _Kept)."""
    # Values, not pickles: equal results read from the cache and fresh ones pickle differently
    # (pickle shares objects by identity). A finding is its field values; repr of the dataclasses
    # would do too, at ~10x the time (0.3 s on transformers' 37k findings).
    digest = hashlib.sha256(
        repr(dataclasses.replace(run, files=(), output_root="", seconds=0.0, warnings=())).encode()
    )
    for result in run.files:
        digest.update(
            repr(
                (
                    result.path,
                    result.status.value,
                    result.reason,
                    result.detail,
                    result.supported,
                    result.supported_by_kernel,
                    len(result.findings),
                )
            ).encode()
        )
        noted = keyed.get(result.path) if keyed is not None else None
        # the very tuple: a stage that amended a file's findings made a new one
        if noted is not None and noted[0] is result.findings:
            digest.update(b"\0key\0" + noted[1])
            continue
        for finding in result.findings:
            digest.update(repr(finding.__getstate__()).encode())
    return digest.digest()


def _report(
    name: str, writer: Callable[[RunResult], bytes | bytearray], run: RunResult, kept: _Kept | None
) -> tuple[Piece, ...]:
    """The pieces of the report's file; a kept report (or part) is reused from the cache when the
    results are unchanged."""
    if name in KEPT_PARTS:
        part, around = KEPT_PARTS[name]
        return around(run, kept.part(name, part, run) if kept is not None else part(run))
    if kept is not None and name in KEPT_REPORTS:
        return (kept.part(name, writer, run),)
    return (writer(run),)


class _Kept:
    """The kept reports of one run: its results' digest, computed once, and the cache holding them.

    Kept reports are found by the digest of the results' values, so an edit that leaves every
    finding as it was reuses them. That digest reads every finding (0.25 s on transformers' 37k);
    the digest of the results' cache keys is one hash a file, and equal keys mean equal results,
    so the value digest is kept under the key digest and read back when nothing changed."""

    def __init__(self, cache: ResultCache, run: RunResult) -> None:
        self.cache = cache
        self.root = os.path.abspath(run.input_root)
        keyed = _results_digest(run, cache.keyed)
        digest = cache.get_digest(keyed)
        if digest is None:
            digest = _results_digest(run)
            cache.put_digest(keyed, digest)
        self.digest = digest

    def part(
        self, name: str, writer: Callable[[RunResult], bytes | bytearray], run: RunResult
    ) -> bytes | bytearray:
        where = self.root
        if name in NAMES_OUTPUT and run.output_root:
            where += "\0" + os.path.abspath(run.output_root)
        content: bytes | bytearray | None = self.cache.get_report(name, where, self.digest)
        if content is None:
            content = writer(run)
            self.cache.put_report(name, where, self.digest, content)
        return content


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
    exclude: Sequence[str] = ()  # globs of files to copy unchanged and not analyse
    runtime_report: Path | None = None  # the simulated NPU's operator-check or findings report, for the xlsx
    suffix: str = "_msft"  # of the output folder's name
    target: str = "npu"  # what the converted code runs on: npu (torch_npu) or accelerator (any device)
    advice: bool = False  # performance advice (ms_fmk_transplt/advice/) beside the conversion


def _runtime(options: Options) -> dict[str, Any]:
    """The RunResult fields of a runtime report, read before any work (a bad one is a UsageError)."""
    if options.runtime_report is None:
        return {}
    from ms_fmk_transplt.reports.runtime import RuntimeReportError, load_runtime_evidence

    try:
        evidence = load_runtime_evidence(options.runtime_report)
    except RuntimeReportError as exc:
        raise UsageError(str(exc)) from None
    return {**evidence, "runtime_report": str(options.runtime_report)}


class Stage(Protocol):
    """What a mode adds to a conversion (distributed/stage.py): it may stand in for some inputs,
    amend their results and add files to the output folder."""

    def inputs(self, entries: list[TreeEntry]) -> list[TreeEntry]:
        """The entries to convert, some perhaps pointing at stand-ins."""
        ...

    def results(self, results: list[FileResult]) -> list[FileResult]:
        """The results, amended."""
        ...

    def files(self) -> list[tuple[str, bytes, bool]]:
        """(name, content, executable) of files to add to the output folder."""
        ...


def output_folder(source: Path, output: Path, suffix: str = "_msft") -> Path:
    """OUT/<name>_msft, <name> being the input folder's name or the input file's stem."""
    resolved = source.resolve()
    name = resolved.stem if resolved.is_file() else resolved.name
    return output / f"{name}{suffix}"


def _check_paths(options: Options) -> Path:
    source, output = options.source, options.output
    if not source.exists() and not source.is_symlink():
        raise UsageError(f"input not found: {source}")
    if not (source.is_file() or source.is_dir()):
        raise UsageError(f"input is neither a file nor a directory: {source}")
    if source.is_file() and not converted(source.name):
        raise UsageError(
            f"input {source} is not a Python file or notebook (.py, .ipynb): give one, or a folder"
        )
    if output.exists() and not output.is_dir():
        raise UsageError(f"output is not a directory: {output}")
    final = output_folder(source, output, options.suffix)
    real_source, real_final = source.resolve(), final.resolve()
    if real_source == real_final or real_final in real_source.parents:
        raise UsageError(f"input {source} lies inside the output folder {final}")
    if (final.exists() or final.is_symlink()) and not options.force:
        raise UsageError(f"output folder already exists: {final} (use --force to replace it)")
    return final


def _prepare(
    options: Options, warnings: list[str]
) -> tuple[str, list[Rule], TableSource, ResultCache | None]:
    """The release, the validated rules, their tables and the result cache; UsageError for anything
    wrong. With the cache, a rule set seen before is neither validated nor compiled again, and its
    tables are unpickled only when a file needs them (a fully cached run needs none)."""
    release = options.release or data.default_release()
    if release not in data.releases():
        raise UsageError(f"unknown release {release!r}; shipped: {', '.join(data.releases())}")
    check_target(options.target, release)
    cache = None
    if options.use_cache:
        try:
            rule_set: bytes | None = rule_set_key(
                options.rule_files, release, options.opt_ins, options.target, advice=options.advice
            )
        except OSError:
            rule_set = None  # an unreadable rule file: load_rules below names it
        if rule_set is not None:
            cache = ResultCache(options.cache_dir or default_cache_dir(), rule_set, warnings)
    compiled = cache.get_compiled() if cache is not None else None
    if compiled is not None:
        rules, packed, load_warnings, text_globs = compiled
    else:
        from ms_fmk_transplt.ruleset import RuleFileError, load_rules  # validation: jsonschema

        load_warnings = []
        try:
            rules = load_rules(options.rule_files, warnings=load_warnings, target=options.target)
        except RuleFileError as exc:
            raise UsageError(str(exc)) from None
    warnings.extend(load_warnings)
    known = {r.params["opt_in"] for r in rules if r.params.get("opt_in")}
    unknown = sorted(set(options.opt_ins) - known)
    if unknown:
        raise UsageError(
            f"unknown --opt-in {', '.join(unknown)}; valid: {', '.join(sorted(known)) or 'none'}"
        )

    def compile_now() -> Tables:
        from ms_fmk_transplt.ruleset import RuleFileError, compile_rules

        try:
            tables = compile_rules(rules, release=release, opt_ins=options.opt_ins, target=options.target)
        except RuleFileError as exc:
            raise UsageError(str(exc)) from None
        if options.advice:
            from ms_fmk_transplt.advice import advisor

            tables.advisor = advisor(release)
        return tables

    if compiled is not None:

        def unpickle() -> Tables:
            from ms_fmk_transplt.engine.interface import Tables

            try:
                tables = pickle.loads(packed)
            except Exception:  # a damaged entry costs only the compilation it saved
                return compile_now()
            return tables if isinstance(tables, Tables) else compile_now()

        return release, rules, TableSource(unpickle, text_globs), cache
    tables = compile_now()
    if cache is not None:
        cache.put_compiled(rules, tables, load_warnings)
    return release, rules, TableSource.of(tables), cache


def check_target(target: str, release: str) -> None:
    """A --target the release can serve; UsageError in one line otherwise (convert, analyse,
    distributed, verify and explain refuse alike)."""
    from ms_fmk_transplt.targets import TARGET_MIN_TORCH, TARGETS

    if target not in TARGETS:
        raise UsageError(f"unknown --target {target!r}; valid: {', '.join(TARGETS)}")
    needed = TARGET_MIN_TORCH.get(target, "")
    if data.torch_older(release, needed):
        raise UsageError(
            f"--target {target} needs PyTorch {needed} or later (torch.accelerator.set_device_index,"
            f" current_accelerator(check_available=True)); -v {release} is older"
        )


def _seen_in(entries: list[TreeEntry], tables: TableSource, cache: ResultCache | None) -> TableSource:
    """The tables knowing the input tree's own modules (engine/project/first_party.py), once per run; the
    cache keys results by that tree too."""
    layout = project_layout(entries, cache)
    if cache is not None:
        cache.knowing(layout.digest(), layout.key_part)
    return tables.seen_in(layout)


def _left_out_notes(left_out: list[str]) -> list[str]:
    """One warning per folder of converted code inside the input that was not walked."""
    return [f"{rel}: output of an earlier ms_fmk_transplt run, not converted again" for rel in left_out]


@contextlib.contextmanager
def writing_to(folder: Path) -> Iterator[None]:
    """Make `folder` (and its missing parents) for a run's output; an error writing there is a
    UsageError naming it, and the folders made are removed again when the run does not finish."""
    made = [p for p in (folder, *folder.parents) if not p.exists() and not p.is_symlink()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe_writable(folder)  # before the work, not after it
        yield
    except OSError as exc:
        _remove_empty(made)
        raise UsageError(f"cannot write output folder {folder}: {exc.strerror or exc}") from None
    except BaseException:
        _remove_empty(made)
        raise


def probe_writable(folder: Path) -> None:
    """Raise OSError unless a file can be made in `folder` (made and removed at once: permissions,
    a read-only or pseudo file system)."""
    handle, name = tempfile.mkstemp(prefix=".ms_fmk_transplt-probe-", dir=folder)
    os.close(handle)
    os.unlink(name)


def _remove_empty(folders: list[Path]) -> None:
    for made in folders:  # deepest first
        with contextlib.suppress(OSError):
            made.rmdir()


def distinct_files(paths: Sequence[Path]) -> tuple[str, ...]:
    """The rule files a run used, each once as first spelled: `-r a.json -r ./a.json` is one file,
    loaded once (ruleset/loader.py's load_rules, which warns), so the reports name it once."""
    first: dict[Path, str] = {}
    for path in paths:
        first.setdefault(Path(path).resolve(), str(path))
    return tuple(first.values())


def _rule_table(rules: list[Rule]) -> tuple[tuple[str, str, str], ...]:
    return tuple((r.id, r.kind, r.summary) for r in rules)


def _advice(options: Options, release: str) -> tuple[AdviceFact, ...]:
    """The advice catalogue in effect for the run's reports: none without --advice."""
    if not options.advice:
        return ()
    from ms_fmk_transplt.advice import advisor

    return advisor(release).facts


def convert_project(
    options: Options, progress: Progress | None = None, stage: Stage | None = None
) -> RunResult:
    """Run a whole conversion; the result's files say what happened to each input path."""
    started = time.perf_counter()
    warnings: list[str] = []
    runtime = _runtime(options)
    release, rules, tables, cache = _prepare(options, warnings)
    final = _check_paths(options)
    left_out: list[str] = []
    with writing_to(options.output):
        entries = apply_excludes(
            discover(options.source, exclude=(options.output, final), left_out=left_out),
            tuple(options.exclude),
            _names_base(options.source),
            warnings,
        )
        warnings.extend(_left_out_notes(left_out))
        warnings.extend(link_notes(entries))
        warnings.extend(filter(None, [no_python_notice(entries, str(options.source))]))
        tables = _seen_in(entries, tables, cache)
        if stage is not None:
            entries = stage.inputs(entries)
        staging = Staging(final, force=options.force)
        with staging as folder:
            sink = StreamWriter(entries, folder)
            results = map_files(entries, tables, jobs=options.jobs, progress=progress, cache=cache, sink=sink)
            if stage is not None:
                results = stage.results(results)
            taken = {e.rel for e in entries}
            results = write_tree(entries, results, folder, streamed=True)
            for name, content, executable in stage.files() if stage is not None else ():
                if name in taken:
                    warnings.append(f"input has a file named {name}; written as {kept_aside(name)}")
                    name = kept_aside(name)
                (folder / name).write_bytes(content)
                if executable:
                    (folder / name).chmod(0o755)
            run = RunResult(
                input_root=str(options.source),
                output_root=str(final),
                files=tuple(results),
                rule_files=distinct_files(options.rule_files),
                release=release,
                seconds=time.perf_counter() - started,
                rules=_rule_table(rules),
                left_out=tuple(left_out),
                advice=_advice(options, release),
                **runtime,
            )
            kept = _Kept(cache, run) if cache is not None else None
            for report, writer in REPORTS.items():
                name = report
                if name in taken:  # the project has a file of that name: keep it, rename the report
                    warnings.append(f"input has a file named {name}; report written as {kept_aside(name)}")
                    name = kept_aside(name)
                with open(folder / name, "wb") as out:
                    out.writelines(_report(report, writer, run, kept))
            staging.commit()
    if cache is not None:
        cache.close()
    return dataclasses.replace(run, warnings=tuple(warnings))


ANALYSIS_REPORTS: dict[str, Callable[[RunResult], bytes | bytearray]] = {
    "unsupported_op.xlsx": reports.unsupported_xlsx,
    "report.json": reports.summary_json,
}


def _names_base(source: Path) -> Path:
    """The folder an input's entries are named from: a folder itself, a file's folder."""
    return source if source.is_dir() else source.parent


def _entries(
    sources: Sequence[Path],
    globs: tuple[str, ...],
    file_by_name: bool = False,
    left_out: list[str] | None = None,
    warnings: list[str] | None = None,
) -> tuple[str, list[TreeEntry]]:
    """The input root and entries: one folder is its own root; files and several paths are named
    relative to the current folder, so a file reads the same (and matches its baseline entry)
    whether a hook passes it alone, with others, or the whole tree is analysed from there.
    `file_by_name`: one file is named by its name alone, as a conversion names it."""
    for source in sources:
        if not source.exists() and not source.is_symlink():
            raise UsageError(f"input not found: {source}")
        if not (source.is_file() or source.is_dir()):
            raise UsageError(f"input is neither a file nor a directory: {source}")
    if len(sources) == 1 and (sources[0].is_dir() or file_by_name):
        found = discover(sources[0], left_out=left_out)
        return str(sources[0]), apply_excludes(found, globs, _names_base(sources[0]), warnings)
    entries: list[TreeEntry] = []
    seen: set[str] = set()
    for source in sources:
        named = _named(source)
        skipped: list[str] = []
        for entry in discover(source, left_out=skipped):
            rel = named if source.is_file() else f"{named.rstrip('/')}/{entry.rel}"
            rel = posixpath.normpath(rel)
            if rel not in seen:
                seen.add(rel)
                entries.append(dataclasses.replace(entry, rel=rel))
        if left_out is not None:
            left_out.extend(posixpath.normpath(f"{named}/{rel}") + "/" for rel in skipped)
    return ".", apply_excludes(entries, globs, Path.cwd(), warnings)


def _named(source: Path) -> str:
    """How a path given among several is named in reports: relative to the current folder when it
    lies inside it (so ./a.py, a.py and /abs/cwd/a.py are one file, and SARIF URIs stay relative)."""
    absolute = Path(os.path.abspath(source))
    try:
        return absolute.relative_to(Path.cwd()).as_posix() or "."
    except ValueError:
        return absolute.as_posix()


def analyse_project(
    options: Options,
    sources: Sequence[Path],
    report_folder: Path | None,
    progress: Progress | None = None,
    keep_output: bool = False,
    file_by_name: bool = False,
) -> RunResult:
    """The analysis of a conversion without writing converted files.

    Reports go to `report_folder` (none when None); `keep_output` keeps each file's converted
    bytes in the result (for --diff), else they are dropped as they arrive; `file_by_name` names
    a single file input by its name, as a conversion does.
    """
    started = time.perf_counter()
    warnings: list[str] = []
    runtime = _runtime(options)
    release, rules, tables, cache = _prepare(options, warnings)
    if report_folder is not None and report_folder.exists() and not report_folder.is_dir():
        raise UsageError(f"output is not a directory: {report_folder}")
    left_out: list[str] = []
    with writing_to(report_folder) if report_folder is not None else contextlib.nullcontext():
        root, entries = _entries(sources, tuple(options.exclude), file_by_name, left_out, warnings)
        warnings.extend(_left_out_notes(left_out))
        warnings.extend(link_notes(entries))
        warnings.extend(filter(None, [no_python_notice(entries, ", ".join(str(s) for s in sources))]))
        tables = _seen_in(entries, tables, cache)

        def drop_output(result: FileResult, data: bytes | None = None) -> FileResult:
            return (
                result if keep_output or result.output is None else dataclasses.replace(result, output=None)
            )

        results = map_files(
            entries, tables, jobs=options.jobs, progress=progress, cache=cache, sink=drop_output
        )
        run = RunResult(
            input_root=root,
            output_root=str(report_folder) if report_folder is not None else "",
            files=tuple(results),
            rule_files=distinct_files(options.rule_files),
            release=release,
            seconds=time.perf_counter() - started,
            rules=_rule_table(rules),
            left_out=tuple(left_out),
            advice=_advice(options, release),
            **runtime,
        )
        if report_folder is not None:
            kept = _Kept(cache, run) if cache is not None else None
            write_all_atomically(
                {
                    report_folder / name: _report(name, writer, run, kept)
                    for name, writer in ANALYSIS_REPORTS.items()
                }
            )
    if cache is not None:
        cache.close()
    return dataclasses.replace(run, warnings=tuple(warnings))


def write_all_atomically(files: dict[Path, tuple[Piece, ...]]) -> None:
    """Write every file whole (from the pieces it is made of), or (as far as a rename can fail)
    none of them."""
    partials = {path: path.with_name(f".{path.name}.{os.getpid()}.partial") for path in files}
    try:
        for path, pieces in files.items():
            with open(partials[path], "wb") as out:
                out.writelines(pieces)
        for path, partial in partials.items():
            os.replace(partial, path)
    finally:
        for partial in partials.values():
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()


def write_atomically(path: Path, content: bytes | bytearray) -> None:
    """Write `path` whole or not at all (a temporary file beside it, renamed into place)."""
    write_all_atomically({path: (content,)})


def unified_diff(run: RunResult) -> tuple[str, RunResult]:
    """What the conversion would change, as one unified diff (paths relative to the input), and
    the run with each source that can no longer be read (deleted, made unreadable or replaced by a
    folder since it was converted) marked SKIPPED with the reason, as an unreadable input is."""
    root = Path(run.input_root)
    chunks: list[str] = []
    files = list(run.files)
    for at, result in enumerate(files):
        if result.output is None:
            continue
        source = root / result.path if root.is_dir() else root  # a file input: the file itself
        try:
            data = source.read_bytes()
        except OSError as exc:
            reason = f"cannot read file for the diff ({exc.strerror or exc})"
            files[at] = dataclasses.replace(result, status=Status.SKIPPED, reason=reason, output=None)
            continue
        before = data.decode("utf-8", errors="replace").splitlines(keepends=True)
        after = result.output.decode("utf-8", errors="replace").splitlines(keepends=True)
        for line in difflib.unified_diff(before, after, f"a/{result.path}", f"b/{result.path}"):
            # a last line without a newline would run into the next diff line and corrupt the patch
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks), dataclasses.replace(run, files=tuple(files))
