"""Command line: `ms_fmk_transplt -i SRC -o OUT [-r rules.json]` and `ms_fmk_transplt rules list`.

Exit codes: 0 success; 1 some files could not be converted (each named in the log);
2 usage or rule-file error; 3 with --strict, the code uses APIs Ascend does not support.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console

from ms_fmk_transplt import __version__, data
from ms_fmk_transplt.model import Operation, Status

if TYPE_CHECKING:  # rich.progress and rich.table load only when a bar or a table is shown
    from rich.progress import Progress, TaskID

EXIT_OK, EXIT_FAILED_FILES, EXIT_USAGE, EXIT_UNSUPPORTED = 0, 1, 2, 3
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
    if input is None or output is None:
        _fail("both -i/--input and -o/--output are required (see --help)")
    from ms_fmk_transplt.run import Options, UsageError, convert_project

    options = Options(
        source=input,
        output=output,
        rule_files=tuple(rule or ()),
        release=release,
        force=force,
        jobs=jobs,
        opt_ins=tuple(opt_in or ()),
        cache_dir=cache_dir,
        use_cache=not no_cache,
    )
    try:
        with _progress(quiet) as progress:
            run = convert_project(options, progress=progress)
    except UsageError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print("interrupted: nothing was written")
        raise typer.Exit(130) from None
    for warning in run.warnings:
        err.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
    if not quiet:
        _summary(run)
    if run.failed:
        raise typer.Exit(EXIT_FAILED_FILES)
    if strict and any(
        f.operation is Operation.UNSUPPORTED and not f.noop for r in run.files for f in r.findings
    ):
        raise typer.Exit(EXIT_UNSUPPORTED)


class _progress:
    """A rich progress bar on stderr once a run has enough files to be worth one."""

    def __init__(self, quiet: bool) -> None:
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.quiet = quiet

    def __enter__(self):
        return None if self.quiet else self

    def __call__(self, done: int, total: int, path: str) -> None:
        if self.bar is None:
            if total < PROGRESS_MIN_FILES:
                return
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("converting"),
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
