"""A verification's report: lines for the terminal, a JSON document for CI. Pure functions of the outcome."""

from __future__ import annotations

import json
from typing import Any

from ms_fmk_transplt.verify import runtime_findings
from ms_fmk_transplt.verify.failures import Failure, failure_lines
from ms_fmk_transplt.verify.launch import RunOutput
from ms_fmk_transplt.verify.session import Outcome
from ms_fmk_transplt.verify.step_records import RankRecord
from ms_fmk_transplt.verify.verdict import VerifyStatus

STDERR_TAIL = 12


def size_text(nbytes: int) -> str:
    """Bytes as the CUDA/NPU allocators print them (``1.50 MiB``)."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} bytes"


def peak_memory(records: dict[int, RankRecord]) -> dict[int, dict[str, tuple[int, int]]]:
    """Per rank, per simulated device: (peak allocated, peak reserved) bytes."""
    return {rank: dict(record.memory) for rank, record in sorted(records.items()) if record.memory}


def _side_line(label: str, output: RunOutput | None, records: dict[int, RankRecord]) -> str:
    if output is None:
        return f"  {label:<27} not run"
    steps = max((len(r.steps) for r in records.values()), default=0)
    ranks = f" on {len(records)} ranks" if len(records) > 1 else ""
    state = "timed out" if output.timed_out else f"exit {output.returncode}"
    return f"  {label:<27} {steps} step(s){ranks}, {state}, {output.seconds:.1f} s"


def _stderr_tail(output: RunOutput) -> list[str]:
    lines = [line for line in output.stderr_text().splitlines() if line.strip()]
    return [f"      {line}" for line in lines[-STDERR_TAIL:]]


def text_lines(outcome: Outcome) -> list[str]:
    """The report as terminal lines."""
    verdict = outcome.verdict
    lines = [
        f"verify {outcome.script} (converted: "
        + (
            f"{outcome.converted_script})" if outcome.converted_kept else "a temporary copy; -o OUT keeps it)"
        ),
        _side_line("original, CPU:", outcome.cpu, outcome.cpu_records),
    ]
    if outcome.transfer is not None:
        lines.append(_side_line("original, transfer_to_npu:", outcome.transfer, outcome.transfer_records))
    lines += [
        _side_line("converted, simulated NPU:", outcome.npu, outcome.npu_records),
        f"  result: {verdict.message}",
        f"  tolerance: {verdict.tolerance.text()}",
    ]
    named = {
        "cpu": "the original on the CPU",
        "transfer": "the original under transfer_to_npu",
        "npu": "the converted script",
    }
    for label, failures in outcome.failures.items():
        causes = failure_lines(failures)
        if len(causes) == 1:
            lines.append(f"  {named.get(label, label)} failed: {causes[0]}")
        elif causes:
            lines.append(f"  {named.get(label, label)} failed:")
            lines += [f"      {line}" for line in causes]
    difference = verdict.difference
    if difference is not None and (difference.loss is not None or difference.param is not None):
        lines.append(f"  first difference: step {difference.step}, rank {difference.rank}")
        if difference.loss is not None:
            left = "CPU" if outcome.reference.kind == "cpu" else "transfer_to_npu"
            lines.append(
                f"      loss: {difference.loss[0]!r} ({left}) vs {difference.loss[1]!r} (simulated NPU)"
            )
        if difference.param is not None:
            lines.append(f"      first parameter that differs: {difference.param}")
    if outcome.ops is None:
        lines.append("  operator check: no report (the converted run ended before writing it)")
    elif not outcome.ops:
        lines.append("  operator check: every operator and dtype the run used is supported on the NPU")
    else:
        lines.append(f"  operator check: {len(outcome.ops)} operator(s) a real NPU lacks or runs on the CPU:")
        for finding in outcome.ops:
            dtypes = f" ({finding.dtypes})" if finding.dtypes else ""
            lines.append(
                f"      aten::{finding.op} x{finding.count} {finding.status}{dtypes} at {finding.site}"
            )
    lines += runtime_findings.text_lines(outcome.findings)
    peaks = peak_memory(outcome.npu_records)
    for rank, devices in peaks.items():
        shown = ", ".join(
            f"{device} {size_text(allocated)} allocated, {size_text(reserved)} reserved"
            for device, (allocated, reserved) in sorted(devices.items())
        )
        lines.append(f"  simulated NPU peak memory, rank {rank}: {shown}")
    lines += [f"  note: {note}" for note in (*outcome.conversion_notes, *verdict.notes)]
    for output in (outcome.cpu, outcome.transfer, outcome.npu):
        if output is outcome.cpu and (
            verdict.status is VerifyStatus.NEEDS_CUDA or outcome.transfer is not None
        ):
            continue  # its reason is in the result line, or its exception above: it is not the reference
        if output is not None and (output.returncode != 0 or output.timed_out):
            lines.append(f"  {output.label} run's stderr, last lines:")
            lines += _stderr_tail(output)
    if outcome.work_dir is not None:
        lines.append(f"  runs' output and records: {outcome.work_dir}")
    lines.append(f"exit {verdict.exit_code}")
    return lines


def _run_document(output: RunOutput | None, records: dict[int, RankRecord]) -> dict[str, Any] | None:
    if output is None:
        return None
    return {
        "command": list(output.command),
        "exit_code": output.returncode,
        "timed_out": output.timed_out,
        "seconds": round(output.seconds, 3),
        "steps": {str(rank): len(record.steps) for rank, record in sorted(records.items())},
        "losses": {
            str(rank): [list(step.losses) for step in record.steps]
            for rank, record in sorted(records.items())
        },
    }


def _failure(failure: Failure) -> dict[str, Any]:
    return {"exception": failure.exception, "site": failure.site, "ranks": list(failure.ranks)}


def json_document(outcome: Outcome) -> bytes:
    """The report as JSON (status, exit code, first difference, both runs, operators, peak memory)."""
    verdict = outcome.verdict
    difference = verdict.difference
    document = {
        "status": verdict.status.name.lower(),
        "exit_code": verdict.exit_code,
        "message": verdict.message,
        "tolerance": verdict.tolerance.document(),
        "script": str(outcome.script),
        "converted_script": str(outcome.converted_script),
        "first_difference": None
        if difference is None
        else {
            "step": difference.step,
            "rank": difference.rank,
            "what": difference.what,
            "loss": list(difference.loss) if difference.loss is not None else None,
            "parameter": difference.param,
        },
        "reference": {"kind": outcome.reference.kind, "why": outcome.reference.why},
        "cpu": _run_document(outcome.cpu, outcome.cpu_records),
        "transfer": _run_document(outcome.transfer, outcome.transfer_records),
        "npu": _run_document(outcome.npu, outcome.npu_records),
        "failures": {label: [_failure(f) for f in failures] for label, failures in outcome.failures.items()},
        "operator_check": None
        if outcome.ops is None
        else [
            {"op": f.op, "count": f.count, "status": f.status, "dtypes": f.dtypes, "first_call_site": f.site}
            for f in outcome.ops
        ],
        "runtime_findings": runtime_findings.document(outcome.findings),
        "npu_peak_memory": {
            str(rank): {device: {"allocated": a, "reserved": r} for device, (a, r) in devices.items()}
            for rank, devices in peak_memory(outcome.npu_records).items()
        },
        "notes": [*outcome.conversion_notes, *verdict.notes],
    }
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")
