"""What a verification concludes from its two runs, and the exit code that says it to a CI job.

Pure functions of the runs' outcomes (exit codes, records, operator findings): no process is
started here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

from ms_fmk_transplt.verify.step_records import (
    EXACT,
    Difference,
    RankRecord,
    Tolerance,
    first_difference,
    step_count_difference,
)


class VerifyStatus(Enum):
    """A verification's result; the value is the exit code."""

    IDENTICAL = 0
    DIFFERENT = 1
    NPU_FAILED = 3
    CPU_FAILED = 4
    NEEDS_CUDA = 5
    UNSUPPORTED_OPS = 6
    NO_STEPS = 7


#: exit code 2 is the command line's: a usage error, a missing script, a failed conversion
EXIT_USAGE = 2


@dataclass(frozen=True)
class SideResult:
    """One run as the verdict sees it."""

    returncode: int
    records: dict[int, RankRecord]
    timed_out: bool = False
    needs_cuda: str | None = None  # the stderr line saying the script needs CUDA
    teardown_abort: bool = False  # stock gloo's abort while tearing down, after the last step

    @property
    def steps(self) -> int:
        """Steps of the rank that made the most."""
        return max((len(r.steps) for r in self.records.values()), default=0)

    def completed(self, reference: bool) -> bool:
        """Exited cleanly; a CPU reference (``reference``) whose every rank wrote its end line and
        that then hit stock gloo's teardown abort counts too (the simulated NPU gets no such allowance)."""
        if self.timed_out:
            return False
        if self.returncode == 0:
            return True
        return (
            reference
            and self.teardown_abort
            and bool(self.records)
            and all(r.ended is not None for r in self.records.values())
        )


@dataclass(frozen=True)
class Reference:
    """The run the converted script is compared with: the original on the CPU (``cpu``) or under
    the simulated NPU's transfer_to_npu (``transfer``), why, and the CPU run when one was made."""

    kind: str = "cpu"
    why: str | None = None  # why the CPU is not the reference
    cpu: SideResult | None = None

    @property
    def where(self) -> str:
        """Where the reference ran, as the messages say it."""
        return "on the CPU" if self.kind == "cpu" else "under transfer_to_npu"

    @property
    def sides(self) -> tuple[str, str]:
        """The two runs of a comparison, as the messages say them."""
        if self.kind == "cpu":
            return "on the CPU", "on the simulated NPU"
        return "under transfer_to_npu", "in the converted copy"


@dataclass(frozen=True)
class OpFinding:
    """An operator the operator check says a real NPU would not run as the script asks."""

    op: str
    count: int
    status: str  # unsupported or unsupported_dtype
    dtypes: str
    site: str


@dataclass(frozen=True)
class Verdict:
    """The result, its one-line explanation, the first difference if any, and notes."""

    status: VerifyStatus
    message: str
    difference: Difference | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    tolerance: Tolerance = EXACT  # what the comparison allowed

    @property
    def exit_code(self) -> int:
        """The code the command exits with."""
        return self.status.value


def read_opcheck(path: Path) -> list[OpFinding] | None:
    """The operator report's unsupported rows (ops and dtypes), or None when no report was written."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["ops"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [
        OpFinding(
            str(r["op"]),
            int(r["count"]),
            str(r["status"]),
            str(r.get("unsupported_dtypes", "")),
            str(r.get("first_call_site", "")),
        )
        for r in rows
        if r.get("status") in ("unsupported", "unsupported_dtype")
    ]


def judge(
    cpu: SideResult | None,
    npu: SideResult,
    ops: list[OpFinding] | None = None,
    fail_on_ops: bool = False,
    reference: Reference | None = None,
    tolerance: Tolerance = EXACT,
) -> Verdict:
    """The verdict on a reference run (``cpu``; None: not run) of the original, on the CPU or as
    ``reference`` says, and a simulated-NPU run of the converted script, alike under `tolerance`."""
    reference = reference or Reference()
    verdict = replace(_compare(cpu, npu, reference, tolerance), tolerance=tolerance)
    if reference.why is not None:
        note = f"reference: the original under transfer_to_npu on the simulated NPU, because {reference.why}"
        verdict = replace(verdict, notes=(note, *verdict.notes))
    if fail_on_ops and ops and verdict.status in (VerifyStatus.IDENTICAL, VerifyStatus.NEEDS_CUDA):
        names = ", ".join(sorted({f.op for f in ops}))
        return Verdict(
            VerifyStatus.UNSUPPORTED_OPS,
            f"{verdict.message}; but the operator check found {len(ops)} operator(s) a real NPU "
            f"lacks or runs on the CPU: {names}",
            verdict.difference,
            verdict.notes,
            tolerance,
        )
    return verdict


def _compare(cpu: SideResult | None, npu: SideResult, reference: Reference, tolerance: Tolerance) -> Verdict:
    notes: list[str] = []
    npu_ok = npu.completed(reference=False)
    npu_failure = "timed out" if npu.timed_out else f"exited {npu.returncode}"
    where = reference.where
    if cpu is None or (cpu.needs_cuda and not cpu.records):
        why = f" ({cpu.needs_cuda})" if cpu is not None and cpu.needs_cuda else ""
        if reference.kind == "transfer":
            why = f" nor under transfer_to_npu{why}"
        if not npu_ok:
            return Verdict(
                VerifyStatus.NPU_FAILED,
                f"the converted script {npu_failure} on the simulated NPU after {npu.steps} step(s); the original cannot run on the CPU{why}",
            )
        return Verdict(
            VerifyStatus.NEEDS_CUDA,
            f"not compared: the original cannot run on the CPU{why}; the converted script made "
            f"{npu.steps} step(s) on the simulated NPU",
        )
    if cpu.teardown_abort and cpu.returncode != 0 and cpu.completed(reference=True):
        notes.append("the CPU reference's stock gloo aborted while tearing down, after its last step")
    unreadable = sorted(
        {
            p.name
            for side in (cpu, npu)
            for r in side.records.values()
            for st in r.steps
            for p in st.params
            if p.digest.startswith("unreadable")
        }
    )
    if unreadable:
        notes.append(f"parameters the recorder could not read, so not compared: {', '.join(unreadable[:5])}")
    difference = first_difference(cpu.records, npu.records, reference.sides, tolerance)
    if difference is not None:
        return Verdict(
            VerifyStatus.DIFFERENT,
            f"different at step {difference.step}, rank {difference.rank}: {difference.what}",
            difference,
            tuple(notes),
        )
    common = min(cpu.steps, npu.steps)
    alike = f" (the {common} step(s) both runs made are identical)" if common else ""
    cpu_failure = "timed out" if cpu.timed_out else f"exited {cpu.returncode}"
    if not cpu.completed(reference=True) and cpu.needs_cuda:
        if not npu_ok:
            return Verdict(
                VerifyStatus.NPU_FAILED,
                f"the converted script {npu_failure} on the simulated NPU after {npu.steps} step(s); the original stopped {where} at step {cpu.steps} needing CUDA ({cpu.needs_cuda})",
                None,
                tuple(notes),
            )
        return Verdict(
            VerifyStatus.NEEDS_CUDA,
            f"identical for the {common} step(s) the original made {where} before it needed CUDA ({cpu.needs_cuda})",
            None,
            tuple(notes),
        )
    if not cpu.completed(reference=True):
        # the original is broken here (an input, a package, a torch version): that comes first
        also = f"; the converted script {npu_failure} too" if not npu_ok else ""
        return Verdict(
            VerifyStatus.CPU_FAILED,
            f"the original {cpu_failure} {where} after {cpu.steps} step(s){also}{alike}",
            None,
            tuple(notes),
        )
    if not npu_ok:
        return Verdict(
            VerifyStatus.NPU_FAILED,
            f"the converted script {npu_failure} on the simulated NPU after {npu.steps} step(s){alike}",
            None,
            tuple(notes),
        )
    if not cpu.records and not npu.records:
        return Verdict(
            VerifyStatus.NO_STEPS,
            "no optimizer step or backward() was seen in either run: nothing to compare",
            None,
            tuple(notes),
        )
    if not cpu.records:  # nothing to compare with: not a difference of the port
        nowhere = (
            "on the CPU nor under transfer_to_npu"
            if reference.kind == "transfer" and reference.cpu
            else where
        )
        return Verdict(
            VerifyStatus.NO_STEPS,
            f"the original made no optimizer step {nowhere}: nothing to compare; the converted "
            f"script made {npu.steps} step(s) on the simulated NPU",
            None,
            tuple(notes),
        )
    counts = step_count_difference(cpu.records, npu.records, reference.sides)
    if counts is not None:
        return Verdict(VerifyStatus.DIFFERENT, f"different: {counts.what}", counts, tuple(notes))
    ranks = len(npu.records)
    where = f" on each of {ranks} ranks" if ranks > 1 else ""
    # under a tolerance, runs that are bit for bit all the same say so
    exact = tolerance.exact or first_difference(cpu.records, npu.records, reference.sides) is None
    how = "losses and every parameter bit for bit"
    if not tolerance.exact:
        allowed = f"a relative {tolerance.relative:g}"
        how = f"{how} ({allowed} allowed)" if exact else f"losses within {allowed} of the original's"
    return Verdict(
        VerifyStatus.IDENTICAL,
        f"{'identical' if exact else 'alike'}: {common} step(s){where}, {how}",
        None,
        tuple(notes),
    )


def with_portable_cpu(verdict: Verdict, on_cpu: Verdict) -> Verdict:
    """`--target accelerator`: the verdict on the simulated NPU joined with the one on the CPU run
    of the same device-agnostic copy; a failure or difference on either side is the result."""
    said = f"the converted script on the CPU: {on_cpu.message}"
    if on_cpu.status is VerifyStatus.IDENTICAL or verdict.status is not VerifyStatus.IDENTICAL:
        return replace(verdict, notes=(*verdict.notes, said))
    return Verdict(on_cpu.status, said, on_cpu.difference, (*verdict.notes, *on_cpu.notes), on_cpu.tolerance)
