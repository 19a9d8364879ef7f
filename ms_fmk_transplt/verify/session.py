"""One verification, start to end: convert (or reuse a conversion), run the original on the CPU
(or under the simulated NPU's transfer_to_npu when the CPU cannot be its reference), run the
converted script on the simulated NPU, read the runs' records and judge them."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ms_fmk_transplt.records import RuntimeFinding
from ms_fmk_transplt.verify import launch, runtime_findings
from ms_fmk_transplt.verify.failures import Failure, project_test, read_failures
from ms_fmk_transplt.verify.sites import original_site
from ms_fmk_transplt.verify.step_records import (
    RankRecord,
    RecordError,
    computes_in,
    read_records,
    tolerance_for,
)
from ms_fmk_transplt.verify.verdict import (
    OpFinding,
    Reference,
    SideResult,
    Verdict,
    judge,
    read_opcheck,
    with_portable_cpu,
)

#: --reference: the CPU, transfer_to_npu on the simulated NPU, or the CPU unless it cannot be one
REFERENCES = ("auto", "cpu", "transfer")


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
    reference: str = "auto"
    devices: int | None = None  # simulated NPUs for the NPU runs; None: the runtime's default
    # accelerator: the device-agnostic copy, run on the simulated NPU and on the CPU, each compared
    target: str = "npu"
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
    reference: Reference = field(default_factory=Reference)
    transfer: launch.RunOutput | None = None  # the original under transfer_to_npu, when it was the reference
    transfer_records: dict[int, RankRecord] = field(default_factory=dict)
    failures: dict[str, list[Failure]] = field(default_factory=dict)  # run label -> why it failed
    findings: list[RuntimeFinding] | None = None  # the NPU run's; never in the verdict
    portable_cpu: launch.RunOutput | None = None  # --target accelerator: the converted copy on the CPU
    portable_cpu_records: dict[int, RankRecord] = field(default_factory=dict)


def verify(request: Request, say: Callable[[str], None] = lambda line: None) -> Outcome:
    """Run a verification; ``say`` receives one line per phase."""
    try:
        target = launch.parse_command(list(request.command))
        launch.runtime_dir()
    except launch.CommandError as exc:
        raise VerifyError(str(exc)) from None
    if request.steps < 0 or request.nproc < 1:
        raise VerifyError("--steps must be 0 (no limit) or more and --nproc 1 or more")
    if request.reference not in REFERENCES:
        raise VerifyError(f"--reference must be one of {', '.join(REFERENCES)}, not {request.reference!r}")
    if request.devices is not None and request.devices < 1:
        raise VerifyError("--devices must be 1 or more")
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
        devices=request.devices,
    )
    for side in ("cpu", "transfer", "npu"):
        shutil.rmtree(work / side, ignore_errors=True)
    limit = f"{request.steps} step(s)" if request.steps else "the end"
    cpu: launch.RunOutput | None = None
    cpu_records: dict[int, RankRecord] = {}
    cpu_result: SideResult | None = None
    why: str | None = "asked for (--reference transfer)"  # why the CPU is not the reference
    if request.reference != "transfer":
        cpu_cmd = launch.cpu_command(target, settings)
        say(f"running the original on the CPU to {limit}: {' '.join(cpu_cmd)}")
        cpu = launch.run(
            "cpu", cpu_cmd, launch.environment(work / "cpu", settings, None, "cpu"), work, settings
        )
        cpu_records = read_records(cpu.records)
        cpu_result = _side(cpu, cpu_records)
        why = _cpu_unfit(cpu_result, cpu)
    transfer: launch.RunOutput | None = None
    transfer_records: dict[int, RankRecord] = {}
    reference_result = cpu_result
    if why is not None and request.reference != "cpu":
        transfer_cmd = launch.transfer_command(target, settings)
        say(f"reference: the original under transfer_to_npu, {why}: {' '.join(transfer_cmd)}")
        transfer_env = launch.environment(work / "transfer", settings, None, "transfer")
        transfer = launch.run("transfer", transfer_cmd, transfer_env, work, settings)
        transfer_records = read_records(transfer.records)
        reference_result = _side(transfer, transfer_records)
    elif cpu_result is not None and cpu_result.needs_cuda and not cpu_records:
        say(f"the original cannot run on the CPU ({cpu_result.needs_cuda}): the converted script runs alone")
    reference = Reference(
        "transfer" if transfer is not None else "cpu", why if transfer is not None else None, cpu_result
    )
    opcheck = work / "opcheck.json"
    opcheck.unlink(missing_ok=True)
    npu_cmd = launch.npu_command(converted, target, settings)
    say(f"running the converted script on the simulated NPU: {' '.join(npu_cmd)}")
    npu_env = launch.environment(work / "npu", settings, opcheck, "npu")
    npu_env.update(runtime_findings.environment(work / "findings.json", converted_root))
    (work / "findings.json").unlink(missing_ok=True)
    npu = launch.run("npu", npu_cmd, npu_env, work, settings)
    npu_records = read_records(npu.records)
    findings = runtime_findings.read(work / "findings.json", converted_root, source_root, request.cwd)
    ops = read_opcheck(opcheck)
    cwd = request.cwd.resolve()

    def back(site: str) -> str:  # while the converted copy still exists: it may be in the work folder
        return original_site(site, converted_root, source_root, cwd)

    if ops:
        ops = [replace(f, site=back(f.site)) for f in ops]
    failures = {}
    for output, roots, mapping in (
        (cpu, (source_root, cwd), _relative(cwd)),
        (transfer, (source_root, cwd), _relative(cwd)),
        (npu, (converted_root,), back),
    ):
        if output is not None and (output.returncode != 0 or output.timed_out):
            failures[output.label] = read_failures(
                output.records, output.stderr_text(), project_test(*roots), mapping
            )
    reference_records = reference_result.records if reference_result is not None else {}
    tolerance = tolerance_for(tuple(request.opt_ins), computes_in(reference_records, npu_records))
    verdict = judge(reference_result, _side(npu, npu_records), ops, request.fail_on_ops, reference, tolerance)
    portable: launch.RunOutput | None = None
    portable_records: dict[int, RankRecord] = {}
    if request.target == "accelerator":  # the same copy must also train as the original on the CPU
        portable_cmd = launch.cpu_command(launch.Target(converted, target.args), settings)
        say(f"running the converted script on the CPU: {' '.join(portable_cmd)}")
        portable_env = launch.environment(work / "portable_cpu", settings, None, "cpu")
        portable = launch.run("portable-cpu", portable_cmd, portable_env, work, settings)
        portable_records = read_records(portable.records)
        if portable.returncode != 0 or portable.timed_out:
            failures[portable.label] = read_failures(
                portable.records, portable.stderr_text(), project_test(converted_root), back
            )
        # on the CPU the copy is held to the original's CPU run, whatever the NPU's reference was
        cpu_reference = (cpu_result, Reference()) if cpu_result is not None else (reference_result, reference)
        on_cpu = judge(
            cpu_reference[0], _side(portable, portable_records), None, False, cpu_reference[1], tolerance
        )
        verdict = with_portable_cpu(verdict, on_cpu)
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
        reference,
        transfer,
        transfer_records,
        failures,
        findings,
        portable,
        portable_records,
    )


def _cpu_unfit(cpu: SideResult, output: launch.RunOutput) -> str | None:
    """Why the original's CPU run cannot be the reference, or None when it can."""
    if cpu.needs_cuda:
        return f"the original needs CUDA on the CPU ({cpu.needs_cuda})"
    if cpu.records:
        disabled = output.cuda_disabled()
        if disabled and cpu.completed(reference=True):
            return f"on the CPU torch switched off a CUDA feature the script uses ({disabled})"
        return None
    if not cpu.completed(reference=True):
        state = "timed out" if cpu.timed_out else f"exited {cpu.returncode}"
        return f"the original {state} on the CPU before its first step"
    return "the original made no optimizer step on the CPU"


def _relative(cwd: Path) -> Callable[[str], str]:
    def shown(site: str) -> str:
        path, _, line = site.rpartition(":")
        try:
            return f"{Path(path).resolve().relative_to(cwd).as_posix()}:{line}"
        except ValueError:
            return site

    return shown


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
        target=request.target,
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
