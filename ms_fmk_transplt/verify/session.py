"""One verification, start to end: convert (or reuse a conversion), run the original on the CPU,
run the converted script on the simulated NPU, read both runs' records and judge them."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ms_fmk_transplt.verify import launch, runtime_findings
from ms_fmk_transplt.verify.records import RankRecord, RecordError, read_records
from ms_fmk_transplt.verify.sites import original_site
from ms_fmk_transplt.verify.verdict import OpFinding, SideResult, Verdict, judge, read_opcheck


class VerifyError(Exception):
    """Verification could not start (bad command, conversion error): exit code 2."""


@dataclass(frozen=True)
class Request:
    """What the user asked for."""

    command: Sequence[str]
    steps: int = 10
    nproc: int = 1
    seed: int | None = 0
    timeout: float | None = None
    source: Path | None = None  # the project to convert; default: the script's folder
    output: Path | None = None  # where to convert; default: the work folder
    converted: Path | None = None  # an existing <name>_msft folder to use instead of converting
    rule_files: Sequence[Path] = ()
    opt_ins: Sequence[str] = ()
    force: bool = False
    work_dir: Path | None = None  # kept; default: a temporary folder removed at the end
    fail_on_ops: bool = False
    cwd: Path = field(default_factory=Path.cwd)


@dataclass(frozen=True)
class Outcome:
    """A finished verification: the verdict and what it was made from."""

    verdict: Verdict
    script: Path
    converted_script: Path
    cpu: launch.RunOutput | None
    npu: launch.RunOutput
    cpu_records: dict[int, RankRecord]
    npu_records: dict[int, RankRecord]
    ops: list[OpFinding] | None
    conversion_notes: tuple[str, ...]
    work_dir: Path | None
    converted_kept: bool = True  # False: the conversion was made in the temporary work folder, now gone
    findings: list[runtime_findings.RuntimeFinding] | None = None  # the NPU run's; never in the verdict


def verify(request: Request, say: Callable[[str], None] = lambda line: None) -> Outcome:
    """Run a verification; ``say`` receives one line per phase."""
    try:
        target = launch.parse_command(list(request.command))
        launch.runtime_dir()
    except launch.CommandError as exc:
        raise VerifyError(str(exc)) from None
    if request.steps < 0 or request.nproc < 1:
        raise VerifyError("--steps must be 0 (no limit) or more and --nproc 1 or more")
    keep = request.work_dir is not None
    work = request.work_dir or Path(tempfile.mkdtemp(prefix="ms_fmk_transplt_verify_"))
    try:
        work.mkdir(parents=True, exist_ok=True)
        return _verify(request, target, work.resolve(), say, keep)
    except RecordError as exc:
        raise VerifyError(str(exc)) from None
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _verify(
    request: Request, target: launch.Target, work: Path, say: Callable[[str], None], keep: bool
) -> Outcome:
    converted, converted_root, source_root, notes = _converted_script(request, target, work, say)
    settings = launch.Settings(
        steps=request.steps,
        seed=request.seed,
        nproc=request.nproc,
        timeout=request.timeout,
        cwd=request.cwd,
    )
    for side in ("cpu", "npu"):
        shutil.rmtree(work / side, ignore_errors=True)
    limit = f"{request.steps} step(s)" if request.steps else "the end"
    say(f"running the original on the CPU to {limit}: {' '.join(launch.cpu_command(target, settings))}")
    cpu_env = launch.environment(work / "cpu", settings, None)
    cpu = launch.run("cpu", launch.cpu_command(target, settings), cpu_env, work, settings)
    cpu_records = read_records(cpu.records)
    cpu_result = _side(cpu, cpu_records)
    if cpu_result.needs_cuda and not cpu_records:
        say(f"the original cannot run on the CPU ({cpu_result.needs_cuda}): the converted script runs alone")
    opcheck = work / "opcheck.json"
    opcheck.unlink(missing_ok=True)
    npu_cmd = launch.npu_command(converted, target, settings)
    say(f"running the converted script on the simulated NPU: {' '.join(npu_cmd)}")
    npu_env = launch.environment(work / "npu", settings, opcheck)
    npu_env.update(runtime_findings.environment(work / "findings.json", converted_root))
    (work / "findings.json").unlink(missing_ok=True)
    npu = launch.run("npu", npu_cmd, npu_env, work, settings)
    npu_records = read_records(npu.records)
    findings = runtime_findings.read(work / "findings.json", converted_root, source_root, request.cwd)
    ops = read_opcheck(opcheck)
    if ops:  # while the converted copy still exists: it may be in the work folder
        cwd = request.cwd.resolve()
        ops = [replace(f, site=original_site(f.site, converted_root, source_root, cwd)) for f in ops]
    verdict = judge(cpu_result, _side(npu, npu_records), ops, request.fail_on_ops)
    return Outcome(
        verdict,
        target.script,
        converted,
        cpu,
        npu,
        cpu_records,
        npu_records,
        ops,
        notes,
        work if keep else None,
        keep or request.output is not None or request.converted is not None,
        findings,
    )


def _side(output: launch.RunOutput, records: dict[int, RankRecord]) -> SideResult:
    return SideResult(
        output.returncode,
        records,
        output.timed_out,
        output.needs_cuda(),
        launch.TEARDOWN_ABORT in output.stderr_text(),
    )


def _converted_script(
    request: Request, target: launch.Target, work: Path, say: Callable[[str], None]
) -> tuple[Path, Path, Path, tuple[str, ...]]:
    """The converted copy of the script (in a reused conversion, or converted now), the converted
    project's folder, the original project's folder and notes on files the conversion failed."""
    source = (request.source or target.script.parent).resolve()
    script = target.script.resolve()
    if source.is_file():
        if source != script:
            raise VerifyError(f"-i {source} is a file and not the script {script}")
        relative = Path(script.name)
        source_root = source.parent
    else:
        source_root = source
        try:
            relative = script.relative_to(source)
        except ValueError:
            raise VerifyError(f"the script {script} is not inside the project -i {source}") from None
    if request.converted is not None:
        converted = request.converted / relative
        if not converted.is_file():
            raise VerifyError(f"--converted {request.converted}: no converted script {relative} in it")
        say(f"using the conversion in {request.converted}")
        return converted, request.converted, source_root, ()
    from ms_fmk_transplt.run import Options, UsageError, convert_project

    output = request.output or work / "converted"
    say(f"converting {source} -> {output}")
    options = Options(
        source=source,
        output=output,
        rule_files=tuple(request.rule_files),
        opt_ins=tuple(request.opt_ins),
        force=request.force or request.output is None,
    )
    from ms_fmk_transplt.interrupts import WorkerLost

    try:
        result = convert_project(options)
    except UsageError as exc:
        raise VerifyError(str(exc)) from None
    except WorkerLost as exc:
        raise VerifyError(f"conversion failed: {exc}") from None
    entry = relative.as_posix()
    for failed in result.failed:
        if failed.path == entry:  # running its unchanged copy would prove nothing about the port
            raise VerifyError(f"conversion failed: {script}: {failed.reason}")
    notes = tuple(f"not converted: {r.path}: {r.reason}" for r in result.failed)
    converted = Path(result.output_root) / relative
    if not converted.is_file():
        raise VerifyError(f"the conversion wrote no {relative} under {result.output_root}")
    return converted, Path(result.output_root), source_root, notes
