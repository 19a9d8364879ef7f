"""Command line: `ms_fmk_transplt -i SRC -o OUT [-r rules.json]`, `ms_fmk_transplt analyse`,
`ms_fmk_transplt -i SRC -o OUT distributed -m MAIN`, `ms_fmk_transplt rules list`.

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
from ms_fmk_transplt.records import Operation, Status

if TYPE_CHECKING:  # rich.progress and rich.table load only when a bar or a table is shown
    from rich.progress import Progress, TaskID

    from ms_fmk_transplt.analysis import Issue
    from ms_fmk_transplt.records import RunResult

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
RUNTIME_REPORT = typer.Option(
    None,
    "--runtime-report",
    help="Merge the simulated NPU's operator-check report (JSON or CSV) into unsupported_op.xlsx.",
)
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
    runtime_report: Path | None = RUNTIME_REPORT,
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
        runtime_report=runtime_report,
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
    runtime_report: Path | None = RUNTIME_REPORT,
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
        runtime_report=runtime_report,
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


@app.command("distributed")
def distributed(
    ctx: typer.Context,
    main: Path | None = typer.Option(
        None,
        "-m",
        "--main",
        help="The training script to distribute (relative to -i; default: -i itself when a file).",
    ),
    model: str | None = typer.Option(
        None,
        "-t",
        "--target-model",
        help="The model's variable to wrap in DistributedDataParallel (default: found).",
    ),
) -> None:
    """`-i SRC -o OUT distributed -m MAIN [-t MODEL]`: convert SRC into OUT/<name>_msft_multi/, MAIN for torchrun."""
    top = ctx.parent.params if ctx.parent is not None else {}
    source, output = top.get("input"), top.get("output")
    if source is None or output is None:
        _fail(
            "give -i/--input and -o/--output before the command: ms_fmk_transplt -i SRC -o OUT distributed -m MAIN"
        )
    gate = _Gate.checked(
        top.get("report_format"),
        top.get("report"),
        top["fail_on"],
        top.get("baseline"),
        top.get("write_baseline"),
    )
    from ms_fmk_transplt.distributed.stage import DistributedStage, MainScriptError
    from ms_fmk_transplt.run import Options, UsageError, convert_project

    if not source.exists():
        _fail(f"input not found: {source}")
    try:
        stage = DistributedStage(source, main, model)
    except MainScriptError as exc:
        _fail(str(exc))
    options = Options(
        source=source,
        output=output,
        rule_files=tuple(top.get("rule") or ()),
        release=top.get("release"),
        force=top["force"],
        jobs=top["jobs"],
        opt_ins=tuple(top.get("opt_in") or ()),
        cache_dir=top.get("cache_dir"),
        use_cache=not top["no_cache"],
        exclude=tuple(top.get("exclude") or ()),
        runtime_report=top.get("runtime_report"),
        suffix=stage.suffix,
    )
    try:
        with _progress(top["quiet"]) as progress:
            run = convert_project(options, progress=progress, stage=stage)
    except UsageError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print("interrupted: nothing was written")
        raise typer.Exit(130) from None
    finally:
        stage.close()
    if not top["quiet"]:
        err.print(
            f"launch: bash {run.output_root}/run_distributed_npu.sh (torchrun --nproc-per-node N {stage.main_rel})"
        )
    _finish(run, top["quiet"], gate, top["strict"])


@app.command("verify", context_settings={"allow_interspersed_args": False})
def verify(
    command: list[str] = typer.Argument(
        ..., help="The original run: -- python SCRIPT.py ARGS", show_default=False
    ),
    steps: int = typer.Option(10, "--steps", min=0, help="Optimizer steps to compare; 0 runs to the end."),
    nproc: int = typer.Option(
        1, "--nproc", min=1, help="Run both sides under torchrun with this many ranks."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed torch, random and numpy with this as each run starts."),
    input: Path | None = typer.Option(
        None, "-i", "--input", help="Project to convert (default: the script's folder)."
    ),
    output: Path | None = typer.Option(None, "-o", "--output", help="Convert into this folder and keep it."),
    converted: Path | None = typer.Option(
        None, "--converted", help="Use this <name>_msft folder; convert nothing."
    ),
    rule: list[Path] | None = typer.Option(None, "-r", "--rule", help="User rule file (JSON); may repeat."),
    opt_in: list[str] | None = typer.Option(None, "--opt-in", help="Rewrites that need a human check."),
    force: bool = typer.Option(False, "--force", help="Replace an existing <name>_msft in -o."),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds each run may take."),
    fail_on_ops: bool = typer.Option(
        False, "--fail-on-ops", help="Exit 6 when the operator check finds anything."
    ),
    work_dir: Path | None = typer.Option(None, "--work-dir", help="Keep the runs' output and records here."),
    report: Path | None = typer.Option(None, "--report", help="Write the JSON report here (- for stdout)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="Only the result line."),
) -> None:
    """Run the original on the CPU and the converted script on the simulated NPU; compare every step.

    Exit codes: 0 identical, 1 different (the first step and parameter are reported),
    2 usage error or failed conversion, 3 the converted script failed,
    4 the original failed on the CPU, 5 the original needs CUDA (the port ran alone),
    6 --fail-on-ops and the operator check found something, 7 no training step seen.
    """
    from ms_fmk_transplt.verify import Request, VerifyError
    from ms_fmk_transplt.verify import verify as run_verify
    from ms_fmk_transplt.verify.report import json_document, text_lines

    if converted is not None and (output is not None or rule):
        _fail("--converted uses an existing conversion: it takes no -o or -r")
    request = Request(
        command=command,
        steps=steps,
        nproc=nproc,
        seed=seed,
        timeout=timeout,
        source=input,
        output=output,
        converted=converted,
        rule_files=tuple(rule or ()),
        opt_ins=tuple(opt_in or ()),
        force=force,
        work_dir=work_dir,
        fail_on_ops=fail_on_ops,
    )
    try:
        outcome = run_verify(
            request,
            say=(lambda line: None)
            if quiet
            else lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True),
        )
    except VerifyError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None
    lines = text_lines(outcome)
    typer.echo(f"result: {outcome.verdict.message}" if quiet else "\n".join(lines))
    if report is not None:
        if str(report) == "-":
            sys.stdout.buffer.write(json_document(outcome))
        else:
            _write(report, json_document(outcome))
    raise typer.Exit(outcome.verdict.exit_code)


class _Gate:
    """The report and gate options, checked before any work is done."""

    def __init__(
        self,
        report_format: str | None,
        report: Path | None,
        fail_on: str,
        baseline: Path | None,
        write_baseline: Path | None,
    ) -> None:
        self.report_format, self.report, self.fail_on = report_format, report, fail_on
        self.baseline, self.write_baseline = baseline, write_baseline
        self.baseline_counts: Counter[tuple[str, str, str, str]] | None = None

    @classmethod
    def checked(
        cls,
        report_format: str | None,
        report: Path | None,
        fail_on: str,
        baseline: Path | None,
        write_baseline: Path | None,
    ) -> _Gate:
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


def _finish(run: RunResult, quiet: bool, gate: _Gate, strict: bool) -> None:
    """Warnings, summary, reports, baseline and the exit code, shared by convert and analyse."""
    from ms_fmk_transplt import analysis
    from ms_fmk_transplt.reports.findings import FORMATS

    for warning in run.warnings:
        err.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
    found = analysis.issues(run)
    if gate.baseline_counts is not None:
        found = analysis.apply_baseline(found, gate.baseline_counts)
    if not quiet:
        _summary(run, found, gate)
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

    def __enter__(self) -> _progress | None:
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


def _summary(run: RunResult, found: list[Issue], gate: _Gate) -> None:
    """The console table: what will not run first, then file counts, then where the reports are."""
    from rich.table import Table

    from ms_fmk_transplt.reports.summary import headline

    reports = {"reports in": run.output_root} if run.output_root else {}
    if gate.report is not None and str(gate.report) != "-":
        reports[f"issues ({gate.report_format})"] = str(gate.report)
    if gate.write_baseline is not None and str(gate.write_baseline) != "-":
        reports["baseline written"] = str(gate.write_baseline)
    table = Table(title=f"ms_fmk_transplt: {run.input_root}", title_justify="left", show_header=False)
    table.add_column("item", justify="left")
    table.add_column("value", justify="left", overflow="fold")
    for item, value in headline(run, found, reports):
        table.add_row(item, value)
    counts = {status: sum(1 for r in run.files if r.status is status) for status in Status}
    for status, count in counts.items():
        if count:
            table.add_row(f"[dim]files[/] {status.value}", str(count))
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
    from ms_fmk_transplt.ruleset import RuleFileError

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
    from ms_fmk_transplt.ruleset import RuleFileError, load_rules

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
    from ms_fmk_transplt.ruleset import load_rules
    from ms_fmk_transplt.ruleset.reference import rules_markdown

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
