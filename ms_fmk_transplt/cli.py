"""Command line: `ms_fmk_transplt -i SRC -o OUT [-r rules.json]`, `ms_fmk_transplt analyse`,
`ms_fmk_transplt rules list`.

Exit codes: 0 success; 1 some files could not be converted or analysed (each named in the log);
2 usage, rule-file or baseline error; 3 with --strict, the code uses APIs Ascend does not support;
4 with --fail-on, the gate found issues at or above its level that are neither suppressed nor in
the baseline.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console

from ms_fmk_transplt import __version__, data
from ms_fmk_transplt.model import Operation, Status

if TYPE_CHECKING:  # rich.progress and rich.table load only when a bar or a table is shown
    from rich.progress import Progress, TaskID

EXIT_OK, EXIT_FAILED_FILES, EXIT_USAGE, EXIT_UNSUPPORTED, EXIT_GATE = 0, 1, 2, 3, 4
PROGRESS_MIN_FILES = 50

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Migrate PyTorch CUDA training scripts to Ascend NPU (torch_npu).",
)
rules_app = typer.Typer(help="Inspect the built-in and user rules.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")
err = Console(stderr=True, highlight=False)


# The gate's options, shared by convert and analyse.
REPORT_FORMAT = typer.Option(None, "--report-format", help="Issues as json, csv or sarif.")
REPORT = typer.Option(None, "--report", help="Write the --report-format report here (- for stdout).")
FAIL_ON = typer.Option(
    "none", "--fail-on", help="Exit 4 on issues: unsupported, partial, not-verified, none."
)
BASELINE = typer.Option(None, "--baseline", help="Issues in this baseline file never fail the gate.")
WRITE_BASELINE = typer.Option(None, "--write-baseline", help="Record the run's issues as a baseline.")


def _fail(message: str) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"ms_fmk_transplt {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def convert(
    ctx: typer.Context,
    input: Path | None = typer.Option(None, "-i", "--input", help="Script file or folder to convert."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Folder that receives <name>_msft/."),
    rule: list[Path] | None = typer.Option(None, "-r", "--rule", help="User rule file (JSON); may repeat."),
    release: str | None = typer.Option(
        None,
        "-v",
        "--version",
        help=f"Ascend release data, by PyTorch version: {', '.join(data.releases())} "
        f"(default {data.default_release()}).",
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing <name>_msft folder."),
    opt_in: list[str] | None = typer.Option(
        None,
        "--opt-in",
        help="Enable rewrites that need a human check, "
        "e.g. fused-optimizers (apex fused optimizers -> torch_npu).",
    ),
    strict: bool = typer.Option(False, "--strict", help="Exit 3 when unsupported APIs are found."),
    jobs: int = typer.Option(0, "-j", "--jobs", min=0, help="Worker processes; 0 chooses by input size."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress bar and no summary table."),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        help="Folder of the result cache (default $XDG_CACHE_HOME/ms_fmk_transplt or ~/.cache/ms_fmk_transplt).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the result cache."),
    exclude: list[str] | None = typer.Option(
        None, "--exclude", help="Glob of files to copy unchanged and not analyse (tests/*); may repeat."
    ),
    diff: bool = typer.Option(
        False, "--diff", help="Print a unified diff of what would change; write nothing."
    ),
    report_format: str | None = REPORT_FORMAT,
    report: Path | None = REPORT,
    fail_on: str = FAIL_ON,
    baseline: Path | None = BASELINE,
    write_baseline: Path | None = WRITE_BASELINE,
    tool_version: bool = typer.Option(
        False,
        "--tool-version",
        callback=_show_version,
        is_eager=True,
        help="Print the tool's version and exit.",
    ),
) -> None:
    """Convert SRC into OUT/<name>_msft/ with msFmkTranspltlog.txt, change_list.csv, unsupported_op.xlsx."""
    if ctx.invoked_subcommand is not None:
        return
    if input is None or (output is None and not diff):
        _fail("both -i/--input and -o/--output are required (see --help)")
    gate = _Gate.checked(report_format, report, fail_on, baseline, write_baseline)
    from ms_fmk_transplt.run import Options, UsageError, analyse_project, convert_project, unified_diff

    options = Options(
        source=input,
        output=output or Path.cwd(),  # --diff writes nothing
        rule_files=tuple(rule or ()),
        release=release,
        force=force,
        jobs=jobs,
        opt_ins=tuple(opt_in or ()),
        cache_dir=cache_dir,
        use_cache=not no_cache,
        exclude=tuple(exclude or ()),
    )
    try:
        with _progress(quiet) as progress:
            if diff:
                run = analyse_project(
                    options, [input], None, progress=progress, keep_output=True, file_by_name=True
                )
            else:
                run = convert_project(options, progress=progress)
    except UsageError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print("interrupted: nothing was written")
        raise typer.Exit(130) from None
    if diff:
        sys.stdout.write(unified_diff(run))
    _finish(run, quiet, gate, strict)


@app.command("analyse")
def analyse(
    paths: list[Path] | None = typer.Argument(None, help="Files or folders to analyse (or use -i)."),
    input: list[Path] | None = typer.Option(
        None, "-i", "--input", help="File or folder to analyse; may repeat."
    ),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="Folder for unsupported_op.xlsx and report.json (default: here)."
    ),
    rule: list[Path] | None = typer.Option(None, "-r", "--rule", help="User rule file (JSON); may repeat."),
    release: str | None = typer.Option(
        None, "-v", "--version", help="Ascend release data, by PyTorch version."
    ),
    exclude: list[str] | None = typer.Option(
        None, "--exclude", help="Glob of files not to analyse; may repeat."
    ),
    report_format: str | None = REPORT_FORMAT,
    report: Path | None = REPORT,
    fail_on: str = FAIL_ON,
    baseline: Path | None = BASELINE,
    write_baseline: Path | None = WRITE_BASELINE,
    no_files: bool = typer.Option(False, "--no-xlsx", help="Write no unsupported_op.xlsx / report.json."),
    strict: bool = typer.Option(False, "--strict", help="Exit 3 when unsupported APIs are found."),
    jobs: int = typer.Option(0, "-j", "--jobs", min=0, help="Worker processes; 0 chooses by input size."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress bar and no summary table."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Folder of the result cache."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the result cache."),
) -> None:
    """Analyse without converting: the reports and the CI gate, no converted file written."""
    sources = [*(input or ()), *(paths or ())]
    if not sources:
        _fail("nothing to analyse: give files or folders, or -i (see --help)")
    gate = _Gate.checked(report_format, report, fail_on, baseline, write_baseline)
    from ms_fmk_transplt.run import Options, UsageError, analyse_project

    options = Options(
        source=sources[0],
        output=output or Path.cwd(),
        rule_files=tuple(rule or ()),
        release=release,
        jobs=jobs,
        cache_dir=cache_dir,
        use_cache=not no_cache,
        exclude=tuple(exclude or ()),
    )
    folder = None if no_files else (output or Path.cwd())
    try:
        with _progress(quiet, "analysing") as progress:
            run = analyse_project(options, sources, folder, progress=progress)
    except UsageError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None
    _finish(run, quiet, gate, strict)


class _Gate:
    """The report and gate options, checked before any work is done."""

    def __init__(self, report_format, report, fail_on, baseline, write_baseline) -> None:
        self.report_format, self.report, self.fail_on = report_format, report, fail_on
        self.baseline, self.write_baseline = baseline, write_baseline
        self.baseline_counts: Counter[tuple[str, str, str, str]] | None = None

    @classmethod
    def checked(cls, report_format, report, fail_on, baseline, write_baseline) -> _Gate:
        from ms_fmk_transplt.analysis import FAIL_ON
        from ms_fmk_transplt.reports.findings import FORMATS

        if fail_on not in FAIL_ON:
            _fail(f"--fail-on {fail_on}: not one of {', '.join(FAIL_ON)}")
        if report is not None and report_format is None:
            report_format = {".sarif": "sarif", ".json": "json", ".csv": "csv"}.get(report.suffix.lower())
            if report_format is None:
                _fail(f"--report {report}: give --report-format (json, csv or sarif)")
        if report_format is not None and report_format not in FORMATS:
            _fail(f"--report-format {report_format}: not one of {', '.join(FORMATS)}")
        if baseline is not None and not baseline.is_file():
            _fail(f"baseline file not found: {baseline}")
        gate = cls(report_format, report, fail_on, baseline, write_baseline)
        if baseline is not None:  # read now: a bad baseline must stop the run before anything is written
            from ms_fmk_transplt.analysis import BaselineError, load_baseline

            try:
                gate.baseline_counts = load_baseline(baseline)
            except BaselineError as exc:
                _fail(str(exc))
        for target in (report, write_baseline):
            if target is not None and str(target) != "-" and not target.parent.is_dir():
                _fail(f"cannot write {target}: folder {target.parent} does not exist")
        return gate


def _finish(run, quiet: bool, gate: _Gate, strict: bool) -> None:
    """Warnings, summary, reports, baseline and the exit code, shared by convert and analyse."""
    from ms_fmk_transplt import analysis
    from ms_fmk_transplt.reports.findings import FORMATS

    for warning in run.warnings:
        err.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
    if not quiet:
        _summary(run)
    found = analysis.issues(run)
    if gate.baseline_counts is not None:
        found = analysis.apply_baseline(found, gate.baseline_counts)
    if gate.report_format is not None:
        content = FORMATS[gate.report_format](run, found)
        if gate.report is None or str(gate.report) == "-":
            sys.stdout.buffer.write(content)
            sys.stdout.flush()
        else:
            _write(gate.report, content)
    if gate.write_baseline is not None:
        _write(gate.write_baseline, analysis.baseline_document(found))
    if run.failed:
        raise typer.Exit(EXIT_FAILED_FILES)
    if strict and any(
        f.operation is Operation.UNSUPPORTED and not f.noop for r in run.files for f in r.findings
    ):
        raise typer.Exit(EXIT_UNSUPPORTED)
    failing = [issue for issue in found if analysis.fails(issue, gate.fail_on)]
    if failing:
        # printed even with -q: a failed gate (a pre-commit hook passes -q) must say where and why
        for issue in failing:
            f = issue.finding
            err.print(
                f"{issue.path}:{f.start_line}:{f.column or 1}: {issue.status.value} [{f.rule_id}] {f.message}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        err.print(f"[bold red]gate:[/] {len(failing)} issue(s) at or above --fail-on {gate.fail_on}")
        raise typer.Exit(EXIT_GATE)


def _write(path: Path, content: bytes) -> None:
    from ms_fmk_transplt.run import write_atomically

    try:
        write_atomically(path, content)
    except OSError as exc:
        _fail(f"cannot write {path}: {exc.strerror or exc}")


class _progress:
    """A rich progress bar on stderr once a run has enough files to be worth one."""

    def __init__(self, quiet: bool, verb: str = "converting") -> None:
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.quiet = quiet
        self.verb = verb

    def __enter__(self):
        return None if self.quiet else self

    def __call__(self, done: int, total: int, path: str) -> None:
        if self.bar is None:
            if total < PROGRESS_MIN_FILES:
                return
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn(self.verb),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=err,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("", total=total)
        assert self.task is not None
        self.bar.update(self.task, completed=done, description=path)

    def __exit__(self, *exc_info: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _summary(run) -> None:
    from rich.table import Table

    table = Table(title=f"ms_fmk_transplt: {run.output_root}", title_justify="left")
    table.add_column("files", justify="left")
    table.add_column("count", justify="right")
    counts = {status: sum(1 for r in run.files if r.status is status) for status in Status}
    for status, count in counts.items():
        if count:
            table.add_row(status.value, str(count))
    ops = {op: sum(1 for r in run.files for f in r.findings if f.operation is op) for op in Operation}
    for op, count in ops.items():
        table.add_row(f"[dim]findings[/] {op.value.lower()}", str(count))
    table.add_row("[dim]seconds[/]", f"{run.seconds:.2f}")
    err.print(table)
    for result in run.failed:
        err.print(f"[red]{result.status.value}:[/] {result.path}: {result.reason}", soft_wrap=True)


@app.command("explain")
def explain(
    target: str = typer.Argument(..., help="FILE or FILE:LINE"),
    rule: list[Path] | None = typer.Option(None, "-r", "--rule", help="Also apply the rules of this file."),
) -> None:
    """Why did (or didn't) this change? Each string literal's role and evidence, each rewrite's rule."""
    from ms_fmk_transplt.explain import explain_target
    from ms_fmk_transplt.rules import RuleFileError

    try:
        lines = explain_target(target, tuple(str(r) for r in rule or ()))
    except (ValueError, RuleFileError) as exc:
        _fail(str(exc))
    sys.stdout.write("".join(line + "\n" for line in lines))


@rules_app.command("list")
def rules_list(
    rule: list[Path] | None = typer.Option(None, "-r", "--rule", help="Also list the rules of this file."),
    kind: str | None = typer.Option(None, "--kind", help="Only rules of this kind."),
) -> None:
    """List rules: id, kind and summary."""
    from ms_fmk_transplt.rules import RuleFileError, load_rules

    try:
        rules = load_rules(tuple(rule or ()))
    except RuleFileError as exc:
        _fail(str(exc))
    from rich.table import Table

    table = Table(show_lines=False)
    for column in ("id", "kind", "summary"):
        table.add_column(column, overflow="fold")
    for r in rules:
        if kind is None or r.kind == kind:
            table.add_row(r.id, r.kind, r.summary)
    Console(highlight=False, width=max(120, Console().width)).print(table)


@rules_app.command("doc")
def rules_doc(
    output: Path | None = typer.Option(None, "-o", "--output", help="Write here instead of stdout."),
) -> None:
    """Print the built-in rules reference (Markdown), generated from the rules' metadata."""
    from ms_fmk_transplt.rules import load_rules
    from ms_fmk_transplt.rules.reference import rules_markdown

    text = rules_markdown(load_rules())
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="ms_fmk_transplt")


if __name__ == "__main__":
    main()
