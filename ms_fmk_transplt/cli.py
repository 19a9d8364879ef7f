"""Command line: `ms_fmk_transplt -i SRC -o OUT [-r rules.json]`, `ms_fmk_transplt analyse`,
`ms_fmk_transplt -i SRC -o OUT distributed -m MAIN`, `ms_fmk_transplt rules list`.

Exit codes: 0 success; 1 some files could not be converted, analysed or read (each named in the
log), or a worker process ended abruptly (nothing written); 2 usage, rule-file or baseline error, or an output that cannot be written; 3 with --strict,
the code uses APIs Ascend does not support; 4 with --fail-on, the gate found issues at or above its
level that are neither suppressed nor in the baseline; 130 / 143 interrupted (SIGINT / SIGTERM).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ms_fmk_transplt import __version__, data, interrupts
from ms_fmk_transplt.records import Operation, Status
from ms_fmk_transplt.terminal import labelled, stderr

if TYPE_CHECKING:  # rich loads only when something is printed; progress and tables when shown
    from rich.progress import Progress, TaskID

    from ms_fmk_transplt.analysis import Issue
    from ms_fmk_transplt.records import RunResult

EXIT_OK, EXIT_FAILED_FILES, EXIT_USAGE, EXIT_UNSUPPORTED, EXIT_GATE = 0, 1, 2, 3, 4
PROGRESS_MIN_FILES = 50
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
PATH = click.Path(path_type=Path)


class _Err:
    """`stderr()`'s methods, reached by attribute (terminal.py: the user's text is never markup).
    Anything that takes a console (a progress bar enters it as a context manager, which attribute
    lookup cannot serve) gets `stderr()` itself."""

    def __getattr__(self, name: str) -> Any:
        return getattr(stderr(), name)


err: Any = _Err()


_ADVICE_HELP = (
    "Performance advice: hand-written RMSNorm, rotary, SwiGLU and attention, optimizers, loader and DDP"
    " settings torch_npu has a faster form of (the Advice sheet; SARIF notes)."
)


# The gate's options, shared by convert and analyse.
def _gate_options(command: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(
        (
            click.option("--report-format", default=None, help="Issues as json, csv or sarif."),
            click.option(
                "--report",
                type=PATH,
                default=None,
                help="Write the --report-format report here (- for stdout).",
            ),
            click.option(
                "--fail-on",
                default="none",
                show_default=True,
                help="Exit 4 on issues: unsupported, partial, not-verified, none.",
            ),
            click.option(
                "--baseline",
                type=PATH,
                default=None,
                help="Issues in this baseline file never fail the gate.",
            ),
            click.option(
                "--write-baseline",
                type=PATH,
                default=None,
                help="Record the run's issues as a baseline (- for stdout).",
            ),
            click.option(
                "--sarif-level",
                default="warning",
                show_default=True,
                help="Lowest level in the SARIF report: error, warning, note (notes are partial and unlisted APIs).",
            ),
            click.option(
                "--runtime-report",
                type=PATH,
                default=None,
                help="Merge the simulated NPU's operator-check report (JSON or CSV) or findings report"
                " (JSON) into unsupported_op.xlsx.",
            ),
        )
    ):
        command = option(command)
    return command


def _target_option(help: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`--target`, the same choices for every command that converts or explains."""
    from ms_fmk_transplt.targets import DEFAULT_TARGET, TARGETS

    return click.option("--target", type=click.Choice(list(TARGETS)), default=DEFAULT_TARGET, help=help)


def _fail(message: str) -> NoReturn:
    err.print(labelled("error:", "bold red", message), soft_wrap=True)
    raise click.exceptions.Exit(EXIT_USAGE)


def _interrupted(exc: KeyboardInterrupt, message: str) -> NoReturn:
    """A run ended by Ctrl-C or SIGTERM (its clean-up done): the message, the shell's exit code."""
    err.print(message)
    raise click.exceptions.Exit(interrupts.exit_code(exc)) from None


class _Group(click.Group):
    """The command group; Ctrl-C or SIGTERM outside a command's run (while a command sets up or
    writes its last reports) ends it with the signal's exit code too, not click's "Aborted!" and 1;
    a worker process lost ends it with one line and exit 1, not a BrokenProcessPool traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            _interrupted(exc, "interrupted")
        except interrupts.WorkerLost as exc:  # any command's run: its staging folder is gone, nothing written
            err.print(labelled("error:", "bold red", f"{exc}; nothing was written"), soft_wrap=True)
            raise click.exceptions.Exit(EXIT_FAILED_FILES) from None


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        click.echo(f"ms_fmk_transplt {__version__}")
        ctx.exit()


@click.group(
    cls=_Group,
    invoke_without_command=True,
    no_args_is_help=True,
    context_settings=CONTEXT,
    help="Migrate PyTorch CUDA training scripts to Ascend NPU (torch_npu).",
)
@click.option("-i", "--input", "input", type=PATH, default=None, help="Script file or folder to convert.")
@click.option("-o", "--output", type=PATH, default=None, help="Folder that receives <name>_msft/.")
@click.option("-r", "--rule", type=PATH, multiple=True, help="User rule file (JSON); may repeat.")
@click.option(
    "-v",
    "--version",
    "release",
    default=None,
    help=f"Ascend release data, by PyTorch version: {', '.join(data.releases())} (default {data.default_release()}).",
)
@_target_option(
    "What the converted code runs on: npu (torch_npu, the default) or accelerator (device-agnostic"
    " torch.accelerator code: CUDA, Ascend, any accelerator, else the CPU; PyTorch 2.7+)."
)
@click.option("--force", is_flag=True, help="Replace an existing <name>_msft folder.")
@click.option(
    "--opt-in",
    multiple=True,
    help="Enable rewrites that need a human check, e.g. fused-optimizers (apex fused optimizers -> torch_npu).",
)
@click.option("--strict", is_flag=True, help="Exit 3 when unsupported APIs are found.")
@click.option("--advice", is_flag=True, help=_ADVICE_HELP)
@click.option(
    "-j", "--jobs", type=click.IntRange(min=0), default=0, help="Worker processes; 0 chooses by input size."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table.")
@click.option(
    "--cache-dir",
    type=PATH,
    default=None,
    help="Folder of the result cache (default $XDG_CACHE_HOME/ms_fmk_transplt or ~/.cache/ms_fmk_transplt).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.option(
    "--exclude", multiple=True, help="Glob of files to copy unchanged and not analyse (tests/*); may repeat."
)
@click.option("--diff", is_flag=True, help="Print a unified diff of what would change; write nothing.")
@_gate_options
@click.option(
    "--tool-version",
    is_flag=True,
    callback=_show_version,
    expose_value=False,
    is_eager=True,
    help="Print the tool's version and exit.",
)
@click.pass_context
def app(
    ctx: click.Context,
    input: Path | None,
    output: Path | None,
    rule: tuple[Path, ...],
    release: str | None,
    target: str,
    force: bool,
    opt_in: tuple[str, ...],
    strict: bool,
    advice: bool,
    jobs: int,
    quiet: bool,
    cache_dir: Path | None,
    no_cache: bool,
    exclude: tuple[str, ...],
    diff: bool,
    report_format: str | None,
    report: Path | None,
    fail_on: str,
    baseline: Path | None,
    write_baseline: Path | None,
    sarif_level: str,
    runtime_report: Path | None,
) -> None:
    """Convert SRC into OUT/<name>_msft/ with msFmkTranspltlog.txt, change_list.csv, unsupported_op.xlsx."""
    if ctx.invoked_subcommand is not None:
        return
    if input is None or (output is None and not diff):
        _fail("both -i/--input and -o/--output are required (see --help)")
    gate = _Gate.checked(report_format, report, fail_on, baseline, write_baseline, sarif_level)
    if diff and gate.on_stdout():
        _fail(f"--diff prints the diff to stdout, and so would {gate.on_stdout()[0]}: give it a file")
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
        target=target,
        advice=advice,
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
    except KeyboardInterrupt as exc:
        _interrupted(exc, "interrupted: nothing was written")
    if diff:
        text, run = unified_diff(run)  # a source gone since it was converted: named, exit 1
        sys.stdout.write(text)
    _finish(run, quiet, gate, strict)


@app.command("analyse", context_settings=CONTEXT)
@click.argument("paths", nargs=-1, type=PATH)
@click.option(
    "-i", "--input", "input", type=PATH, multiple=True, help="File or folder to analyse; may repeat."
)
@click.option(
    "-o",
    "--output",
    type=PATH,
    default=None,
    help="Folder for unsupported_op.xlsx and report.json (default: here).",
)
@click.option("-r", "--rule", type=PATH, multiple=True, help="User rule file (JSON); may repeat.")
@click.option("-v", "--version", "release", default=None, help="Ascend release data, by PyTorch version.")
@_target_option(
    "The rules to analyse with: npu (the default: what the NPU port changes and what Ascend lacks) or"
    " accelerator (what the device-agnostic port changes and reports; PyTorch 2.7+)."
)
@click.option("--exclude", multiple=True, help="Glob of files not to analyse; may repeat.")
@_gate_options
@click.option("--no-xlsx", "no_files", is_flag=True, help="Write no unsupported_op.xlsx / report.json.")
@click.option("--strict", is_flag=True, help="Exit 3 when unsupported APIs are found.")
@click.option("--advice", is_flag=True, help=_ADVICE_HELP)
@click.option(
    "-j", "--jobs", type=click.IntRange(min=0), default=0, help="Worker processes; 0 chooses by input size."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary table.")
@click.option("--cache-dir", type=PATH, default=None, help="Folder of the result cache.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.pass_context
def analyse(ctx: click.Context, **params: Any) -> None:
    """Analyse without converting: the reports and the CI gate, no converted file written."""
    _analyse(**_with_options_before_the_command(ctx))


def _analyse(
    paths: tuple[Path, ...],
    input: tuple[Path, ...],
    output: Path | None,
    rule: tuple[Path, ...],
    release: str | None,
    target: str,
    exclude: tuple[str, ...],
    report_format: str | None,
    report: Path | None,
    fail_on: str,
    baseline: Path | None,
    write_baseline: Path | None,
    sarif_level: str,
    runtime_report: Path | None,
    no_files: bool,
    strict: bool,
    advice: bool,
    jobs: int,
    quiet: bool,
    cache_dir: Path | None,
    no_cache: bool,
) -> None:
    sources = [*(input or ()), *(paths or ())]
    if not sources:
        _fail("nothing to analyse: give files or folders, or -i (see --help)")
    gate = _Gate.checked(report_format, report, fail_on, baseline, write_baseline, sarif_level)
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
        advice=advice,
        target=target,
    )
    folder = None if no_files else (output or Path.cwd())
    try:
        with _progress(quiet, "analysing") as progress:
            run = analyse_project(options, sources, folder, progress=progress)
    except UsageError as exc:
        _fail(str(exc))
    except KeyboardInterrupt as exc:
        _interrupted(exc, "interrupted")
    _finish(run, quiet, gate, strict)


def _with_options_before_the_command(ctx: click.Context) -> dict[str, Any]:
    """The command's options, with those given before its name (`ms_fmk_transplt -i SRC analyse`,
    as `distributed` is called) where the command's own are not given: none is silently dropped."""
    given = dict(ctx.params)
    top = ctx.parent
    if top is None:
        return given
    typed = click.core.ParameterSource.COMMANDLINE
    before = [name for name in top.params if top.get_parameter_source(name) is typed]
    foreign = [name for name in before if name not in given]
    if foreign:
        flags = ", ".join("/".join(p.opts) for p in top.command.params if p.name in foreign)
        _fail(
            f"{flags}: given before `{ctx.info_name}`, which has no such option (see {ctx.info_name} --help)"
        )
    for name in before:
        if ctx.get_parameter_source(name) is not typed:
            value = top.params[name]
            given[name] = (value,) if name == "input" else value  # the command's -i may repeat
    return given


@app.command("distributed", context_settings=CONTEXT)
@click.option(
    "-m",
    "--main",
    type=PATH,
    default=None,
    help="The training script to distribute (relative to -i; default: -i itself when a file).",
)
@click.option(
    "-t",
    "--target-model",
    "model",
    default=None,
    help="The model's variable to wrap in DistributedDataParallel (default: found).",
)
@click.pass_context
def distributed(ctx: click.Context, main: Path | None, model: str | None) -> None:
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
        top.get("sarif_level", "warning"),
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
        advice=bool(top.get("advice")),
        target=top.get("target", "npu"),
    )
    try:
        with _progress(top["quiet"]) as progress:
            run = convert_project(options, progress=progress, stage=stage)
    except UsageError as exc:
        _fail(str(exc))
    except KeyboardInterrupt as exc:
        _interrupted(exc, "interrupted: nothing was written")
    finally:
        stage.close()
    if not top["quiet"]:
        err.print(
            f"launch: bash {run.output_root}/run_distributed_npu.sh (torchrun --nproc-per-node N {stage.main_rel})"
        )
    _finish(run, top["quiet"], gate, top["strict"])


@app.command("verify", context_settings={**CONTEXT, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True)
@click.option(
    "--steps",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Optimizer steps to compare; 0 runs to the end.",
)
@click.option(
    "--nproc",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run both sides under torchrun with this many ranks.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed torch, random and numpy with this as each run starts.",
)
@click.option(
    "-i",
    "--input",
    "input",
    type=PATH,
    default=None,
    help="Project to convert (default: the script's folder).",
)
@click.option("-o", "--output", type=PATH, default=None, help="Convert into this folder and keep it.")
@click.option("--converted", type=PATH, default=None, help="Use this <name>_msft folder; convert nothing.")
@click.option("-r", "--rule", type=PATH, multiple=True, help="User rule file (JSON); may repeat.")
@click.option("--opt-in", multiple=True, help="Rewrites that need a human check.")
@click.option("--force", is_flag=True, help="Replace an existing <name>_msft in -o.")
@click.option("--timeout", type=float, default=None, help="Seconds each run may take.")
@click.option("--fail-on-ops", is_flag=True, help="Exit 6 when the operator check finds anything.")
@click.option(
    "--reference",
    type=click.Choice(["auto", "cpu", "transfer"], case_sensitive=False),
    default="auto",
    show_default=True,
    help="Compare with the original on the CPU, under transfer_to_npu on the simulated NPU, or "
    "the CPU unless the original needs CUDA there, makes no step or loses a CUDA feature.",
)
@click.option(
    "--devices",
    type=click.IntRange(min=1),
    default=None,
    help="Simulated NPUs in the NPU runs (default: the runtime's, 8).",
)
@_target_option(
    "Convert for the NPU (default) or for any accelerator; accelerator also runs the converted"
    " script on the CPU, compared with the original too."
)
@click.option("--work-dir", type=PATH, default=None, help="Keep the runs' output and records here.")
@click.option("--report", type=PATH, default=None, help="Write the JSON report here (- for stdout).")
@click.option("-q", "--quiet", is_flag=True, help="Only the result line.")
def verify(
    command: tuple[str, ...],
    steps: int,
    nproc: int,
    seed: int,
    input: Path | None,
    output: Path | None,
    converted: Path | None,
    rule: tuple[Path, ...],
    opt_in: tuple[str, ...],
    force: bool,
    timeout: float | None,
    fail_on_ops: bool,
    reference: str,
    devices: int | None,
    target: str,
    work_dir: Path | None,
    report: Path | None,
    quiet: bool,
) -> None:
    """Run the original on the CPU (or under transfer_to_npu) and the converted script on the
    simulated NPU; compare every step.

    Exit codes: 0 identical, 1 different (the first step and parameter are reported),
    2 usage error or failed conversion, 3 the converted script failed,
    4 the original failed on its reference, 5 the original needs CUDA even under transfer_to_npu
    (the port ran alone), 6 --fail-on-ops and the operator check found something,
    7 no training step seen in the original, 130 / 143 interrupted (SIGINT / SIGTERM).
    """
    from ms_fmk_transplt.verify import Request, VerifyError
    from ms_fmk_transplt.verify import verify as run_verify
    from ms_fmk_transplt.verify.report import json_document, text_lines

    if converted is not None and (output is not None or rule):
        _fail("--converted uses an existing conversion: it takes no -o or -r")
    request = Request(
        command=list(command),
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
        reference=reference.lower(),
        devices=devices,
        target=target,
    )
    try:
        outcome = run_verify(
            request,
            say=(lambda line: None) if quiet else lambda line: err.print(line, soft_wrap=True),
        )
    except VerifyError as exc:
        _fail(str(exc))
    except KeyboardInterrupt as exc:
        _interrupted(exc, "interrupted")
    lines = text_lines(outcome)
    json_on_stdout = report is not None and str(report) == "-"
    # stdout holds one thing: the JSON report when it goes there, else the text report
    click.echo(f"result: {outcome.verdict.message}" if quiet else "\n".join(lines), err=json_on_stdout)
    if report is not None:
        if json_on_stdout:
            _to_stdout(json_document(outcome))
        else:
            _write(report, json_document(outcome))
    raise click.exceptions.Exit(outcome.verdict.exit_code)


class _Gate:
    """The report and gate options, checked before any work is done."""

    def __init__(
        self,
        report_format: str | None,
        report: Path | None,
        fail_on: str,
        baseline: Path | None,
        write_baseline: Path | None,
        sarif_level: str = "warning",
    ) -> None:
        self.report_format, self.report, self.fail_on = report_format, report, fail_on
        self.baseline, self.write_baseline = baseline, write_baseline
        self.sarif_level = sarif_level
        self.baseline_counts: Counter[tuple[str, str, str, str]] | None = None

    @classmethod
    def checked(
        cls,
        report_format: str | None,
        report: Path | None,
        fail_on: str,
        baseline: Path | None,
        write_baseline: Path | None,
        sarif_level: str = "warning",
    ) -> _Gate:
        from ms_fmk_transplt.analysis import FAIL_ON
        from ms_fmk_transplt.reports.findings import FORMATS, SARIF_LEVELS
        from ms_fmk_transplt.suggest import did_you_mean

        fail_on = fail_on.lower()
        if fail_on not in FAIL_ON:
            _fail(f"--fail-on {fail_on}: not one of {', '.join(FAIL_ON)}{did_you_mean(fail_on, FAIL_ON)}")
        sarif_level = sarif_level.lower()
        if sarif_level not in SARIF_LEVELS:
            hint = did_you_mean(sarif_level, SARIF_LEVELS)
            _fail(f"--sarif-level {sarif_level}: not one of {', '.join(SARIF_LEVELS)}{hint}")
        if report is not None and report_format is None:
            report_format = {".sarif": "sarif", ".json": "json", ".csv": "csv"}.get(report.suffix.lower())
            if report_format is None:
                _fail(f"--report {report}: give --report-format (json, csv or sarif)")
        if report_format is not None:  # JSON or json, as a report's suffix may be written either way
            report_format = report_format.lower()
        if report_format is not None and report_format not in FORMATS:
            _fail(
                f"--report-format {report_format}: not one of {', '.join(FORMATS)}{did_you_mean(report_format, FORMATS)}"
            )
        if baseline is not None and not baseline.is_file():
            _fail(f"baseline file not found: {baseline}")
        gate = cls(report_format, report, fail_on, baseline, write_baseline, sarif_level)
        if baseline is not None:  # read now: a bad baseline must stop the run before anything is written
            from ms_fmk_transplt.analysis import BaselineError, load_baseline

            notes: list[str] = []
            try:
                gate.baseline_counts = load_baseline(baseline, notes)
            except BaselineError as exc:
                _fail(str(exc))
            for note in notes:  # a misspelt key (`cnt`) would otherwise vanish
                err.print(labelled("warning:", "yellow", note), soft_wrap=True)
        for target in (report, write_baseline):
            if target is not None and str(target) != "-":
                _check_writable(target)
        if len(gate.on_stdout()) > 1:
            _fail(f"{' and '.join(gate.on_stdout())} both write to stdout: give one of them a file")
        return gate

    def on_stdout(self) -> list[str]:
        """The options whose document goes to stdout (nothing else may go there with it)."""
        users = []
        if self.report_format is not None and (self.report is None or str(self.report) == "-"):
            users.append("--report -" if self.report is not None else f"--report-format {self.report_format}")
        if self.write_baseline is not None and str(self.write_baseline) == "-":
            users.append("--write-baseline -")
        return users


def _finish(run: RunResult, quiet: bool, gate: _Gate, strict: bool) -> None:
    """Warnings, summary, reports, baseline and the exit code, shared by convert and analyse."""
    from ms_fmk_transplt import analysis
    from ms_fmk_transplt.reports.findings import FORMATS

    for warning in run.warnings:
        err.print(labelled("warning:", "yellow", warning), soft_wrap=True)
    # every finding is read to list the issues (0.12 s on transformers' 37k): only when something
    # shows or judges them; with -q and the default gate nothing does
    judged = gate.fail_on != "none" or gate.report_format is not None or gate.write_baseline is not None
    found = analysis.issues(run) if judged or not quiet or gate.baseline_counts is not None else []
    if gate.baseline_counts is not None:
        found = analysis.apply_baseline(found, gate.baseline_counts)
    if not quiet:
        _summary(run, found, gate)
    for result in run.failed:  # printed even with -q: they are why the run exits 1
        err.print(
            labelled(f"{result.status.value}:", "red", f"{result.path}: {result.reason}"), soft_wrap=True
        )
    if gate.report_format is not None:
        if gate.report_format == "sarif":
            from ms_fmk_transplt.reports.findings import issues_sarif

            content: bytes | bytearray = issues_sarif(run, found, gate.sarif_level)
        else:
            content = FORMATS[gate.report_format](run, found)
        if gate.report is None or str(gate.report) == "-":
            _to_stdout(content)
        else:
            _write(gate.report, content)
    if gate.write_baseline is not None:
        if str(gate.write_baseline) == "-":
            _to_stdout(analysis.baseline_document(found))
        else:
            _write(gate.write_baseline, analysis.baseline_document(found))
    # every verdict is said before the exit code is chosen: a file that failed (a Python 2 script)
    # must not hide what the gate found in the others
    codes = [EXIT_FAILED_FILES] if run.failed else []
    unsupported = strict and [
        r for r in run.files for f in r.findings if f.operation is Operation.UNSUPPORTED and not f.noop
    ]
    if unsupported:
        files = len({r.path for r in unsupported})
        err.print(
            labelled(
                "strict:",
                "bold red",
                f"{len(unsupported)} use(s) of APIs Ascend does not support in {files} file(s)",
            ),
            soft_wrap=True,
        )
        codes.append(EXIT_UNSUPPORTED)
    failing = [issue for issue in found if analysis.fails(issue, gate.fail_on)]
    if failing:
        # printed even with -q: a failed gate (a pre-commit hook passes -q) must say where and why
        for issue in failing:
            f = issue.finding
            err.print(
                f"{issue.path}:{f.start_line}:{f.column or 1}: {issue.status.value} [{f.rule_id}] {f.message}",
                soft_wrap=True,
            )
        err.print(
            labelled("gate:", "bold red", f"{len(failing)} issue(s) at or above --fail-on {gate.fail_on}")
        )
        codes.append(EXIT_GATE)
    if codes:  # the first in the order of the exit-code table: failed files, --strict, the gate
        raise click.exceptions.Exit(codes[0])


def _check_writable(path: Path) -> None:
    """Refuse, before any work, a file `_write` could not create: a missing folder on its way is
    made then, as `-o` is, but a file standing where a folder must be, or the file itself a folder,
    cannot be helped."""
    if path.is_dir():
        _fail(f"cannot write {path}: it is a folder")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        _fail(f"cannot write {path}: {folder} is not a folder")
    from ms_fmk_transplt.run import probe_writable

    try:
        probe_writable(folder)
    except OSError as exc:
        _fail(f"cannot write {path}: {exc.strerror or exc}")


def _to_stdout(content: bytes | bytearray) -> None:
    """A machine-readable document on stdout, whole, before anything else the run prints."""
    sys.stdout.buffer.write(content)
    sys.stdout.flush()


def _write(path: Path, content: bytes | bytearray) -> None:
    """Write a report or baseline whole, making the folders it goes in (as -o does)."""
    from ms_fmk_transplt.run import write_atomically

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
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
                TextColumn("{task.description}", markup=False),  # a path, printed as it is
                console=stderr(),
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
            table.add_row(labelled("files", "dim", status.value), str(count))
    ops = {op: sum(1 for r in run.files for f in r.findings if f.operation is op) for op in Operation}
    for op, count in ops.items():
        if op is Operation.ADVICE and not run.advice:
            continue  # advice was not asked for
        table.add_row(labelled("findings", "dim", op.value.lower()), str(count))
    table.add_row(labelled("seconds", "dim"), f"{run.seconds:.2f}")
    err.print(table)


@app.command("explain", context_settings=CONTEXT)
@click.argument("spec", metavar="FILE[:LINE]")
@click.option("-r", "--rule", type=PATH, multiple=True, help="Also apply the rules of this file.")
@click.option("-v", "--version", "release", default=None, help="Ascend release data, by PyTorch version.")
@_target_option(
    "The rules explained: npu (the default) or accelerator (the TA rules of the device-agnostic port)."
)
@click.pass_context
def explain(ctx: click.Context, **params: Any) -> None:
    """Why did (or didn't) this change? Each string literal's role and evidence, each rewrite's rule."""
    _explain(**_with_options_before_the_command(ctx))


def _explain(spec: str, rule: tuple[Path, ...], release: str | None, target: str) -> None:
    from ms_fmk_transplt.explain import explain_target
    from ms_fmk_transplt.ruleset import RuleFileError

    try:
        lines = explain_target(spec, tuple(str(r) for r in rule or ()), release, to=target)
    except (ValueError, RuleFileError) as exc:
        _fail(str(exc))
    sys.stdout.write("".join(line + "\n" for line in lines))


@app.group("rules", context_settings=CONTEXT, no_args_is_help=True)
def rules_app() -> None:
    """Inspect the built-in and user rules."""


@rules_app.command("list", context_settings=CONTEXT)
@click.option("-r", "--rule", type=PATH, multiple=True, help="Also list the rules of this file.")
@click.option("--kind", default=None, help="Only rules of this kind.")
def rules_list(rule: tuple[Path, ...], kind: str | None) -> None:
    """List rules: id, kind and summary."""
    from ms_fmk_transplt.ruleset import RuleFileError, load_rules

    try:
        rules = load_rules(tuple(rule or ()))
    except RuleFileError as exc:
        _fail(str(exc))
    kinds = sorted({r.kind for r in rules})
    if kind is not None and kind not in kinds:
        from ms_fmk_transplt.suggest import did_you_mean

        _fail(f"--kind {kind}: no such rule kind{did_you_mean(kind, kinds)}; kinds: {', '.join(kinds)}")
    from rich.table import Table

    from ms_fmk_transplt.terminal import console

    table = Table(show_lines=False)
    for column in ("id", "kind", "summary"):
        table.add_column(column, overflow="fold")
    for r in rules:
        if kind is None or r.kind == kind:
            table.add_row(r.id, r.kind, r.summary)
    console(width=max(120, console().width)).print(table)


@rules_app.command("doc", context_settings=CONTEXT)
@click.option("-o", "--output", type=PATH, default=None, help="Write here instead of stdout (- for stdout).")
def rules_doc(output: Path | None) -> None:
    """Print the built-in rules reference (Markdown), generated from the rules' metadata."""
    from ms_fmk_transplt.ruleset import load_builtin_rules
    from ms_fmk_transplt.ruleset.reference import rules_markdown

    text = rules_markdown(load_builtin_rules(target=None))  # every --target's rules
    if output is None or str(output) == "-":  # `-` is stdout, as for every other file option
        _to_stdout(text.encode())
    else:
        _write(output, text.encode())


def main() -> None:
    """Console-script entry point: the command, then the process ends (see `end_process`)."""
    with interrupts.stop_on_signals():
        try:
            app(prog_name="ms_fmk_transplt")
        except SystemExit as exc:  # click ends every command, success too, with sys.exit
            status = exc.code
        else:
            status = None
    end_process(status)


def end_process(status: object) -> NoReturn:
    """Exit with `status` as `sys.exit` does, but without the interpreter's finalisation when that
    is safe. Every output is written and closed by the time a command returns; what finalisation
    would do then is free the run's objects one by one (libcst's classes, the tables, the results):
    300-350 ms of a pytorch/examples run at load 10, 10-20 ms without. The atexit handlers
    still run and the standard streams are flushed; a status other than an exit code, a thread
    that is not a daemon still running, or a stream that cannot be flushed takes the usual way."""
    if (status is not None and not isinstance(status, int)) or any(
        not thread.daemon for thread in threading.enumerate() if thread is not threading.main_thread()
    ):
        raise SystemExit(status)
    if not _flushed():  # a closed pipe: the interpreter reports it and sets the status
        raise SystemExit(status)
    atexit._run_exitfuncs()
    # what the handlers printed; 120 is the interpreter's status when that flush fails
    os._exit((status or 0) if _flushed() else 120)


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


if __name__ == "__main__":
    main()
