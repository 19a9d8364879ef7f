"""Reading the step records one run of `verify` leaves behind, and comparing two runs.

The records are JSON lines written by ``runtime_shim/diagnostics/step_record.py`` (one file per process,
``rank<R>.pid<P>.jsonl``): ``{"step", "rank", "optimizer", "losses", "params", "memory", "autocast"}`` per
step, ``{"end": "limit"|"exit", "steps", "memory"}`` last. This module never imports torch.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class RecordError(Exception):
    """A record file that cannot be read: names the file and line."""


@dataclass(frozen=True)
class Param:
    """One parameter after a step: its name, shape, dtype and the digest of its values."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    digest: str


@dataclass(frozen=True)
class Step:
    """One optimizer step (or hand-written update) of one rank."""

    number: int
    rank: int
    optimizer: int | None
    losses: tuple[float | str, ...]
    params: tuple[Param, ...]
    autocast: tuple[str, ...] = ()  # the dtypes of the enabled autocasts entered by this step


@dataclass
class RankRecord:
    """Everything one rank recorded: its steps, how it ended, its simulated devices' peaks."""

    steps: list[Step] = field(default_factory=list)
    ended: str | None = None  # "limit", "exit", or None when the process died first
    memory: dict[str, tuple[int, int]] = field(default_factory=dict)  # device -> (allocated, reserved)

    def note_memory(self, memory: dict[str, list[int]]) -> None:
        """Keep the largest peaks seen per device."""
        for device, (allocated, reserved) in memory.items():
            old = self.memory.get(device, (0, 0))
            self.memory[device] = (max(old[0], int(allocated)), max(old[1], int(reserved)))


def read_records(folder: Path) -> dict[int, RankRecord]:
    """Every rank's record in ``folder`` (empty when no process made a step)."""
    ranks: dict[int, RankRecord] = {}
    if not folder.is_dir():
        return ranks
    for path in sorted(folder.glob("rank*.jsonl")):
        text = path.read_text(encoding="utf-8")
        # a process killed mid-write (a timeout) leaves a last line without its newline: not a step
        lines = text.split("\n")[:-1]
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                _add(ranks, entry, path)
            except (ValueError, KeyError, TypeError) as exc:
                raise RecordError(f"{path}:{number}: unreadable step record: {exc}") from None
    for record in ranks.values():
        record.steps.sort(key=lambda step: step.number)
    return ranks


def _add(ranks: dict[int, RankRecord], entry: dict[str, Any], path: Path) -> None:
    if "end" in entry:
        rank = _rank_of_file(path)
        record = ranks.setdefault(rank, RankRecord())
        record.ended = str(entry["end"])
        record.note_memory(entry.get("memory", {}))
        return
    step = Step(
        number=int(entry["step"]),
        rank=int(entry["rank"]),
        optimizer=entry.get("optimizer"),
        losses=tuple(entry["losses"]),
        params=tuple(
            Param(str(n), tuple(shape), str(dtype), str(d)) for n, shape, dtype, d in entry["params"]
        ),
        autocast=tuple(str(dtype) for dtype in entry.get("autocast", ())),
    )
    record = ranks.setdefault(step.rank, RankRecord())
    record.steps.append(step)
    record.note_memory(entry.get("memory", {}))


def _rank_of_file(path: Path) -> int:
    # the end line carries no rank: the file's name does (rank<R>.pid<P>.jsonl)
    return int(path.name.split(".", 1)[0].removeprefix("rank"))


@dataclass(frozen=True)
class Difference:
    """The first place two runs part: a step of a rank, with the loss and/or parameter that differ."""

    step: int
    rank: int
    what: str  # one line: the loss, the parameter, or the step counts
    loss: tuple[float | str, float | str] | None = None
    param: str | None = None


def same_value(a: float | str, b: float | str) -> bool:
    """Bit-for-bit equality of two recorded loss values (NaN equals NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


SIDES = ("on the CPU", "on the simulated NPU")


@dataclass(frozen=True)
class Tolerance:
    """How close the converted run must stay to the reference: bit for bit (`relative` 0), or its
    losses within a relative tolerance, its parameters then alike in shape and dtype only (the
    recorder keeps digests of their values, which no tolerance can compare)."""

    relative: float = 0.0
    why: str = ""  # what makes the runs differ by rounding

    @property
    def exact(self) -> bool:
        """Bit for bit."""
        return self.relative == 0.0

    def text(self) -> str:
        """The tolerance as the report says it."""
        if self.exact:
            return "exact: losses and every parameter bit for bit"
        return (
            f"losses within a relative {self.relative:g} ({self.why}); parameters compared by shape and dtype"
        )

    def document(self) -> dict[str, object]:
        """The tolerance in verify's JSON report."""
        return {"kind": "exact" if self.exact else "relative", "relative": self.relative, "why": self.why}

    def same(self, a: float | str, b: float | str) -> bool:
        """Two recorded losses alike under this tolerance (NaN equals NaN; a non-number only itself)."""
        if same_value(a, b):
            return True
        if self.exact or not isinstance(a, float) or not isinstance(b, float):
            return False
        return math.isclose(a, b, rel_tol=self.relative, abs_tol=0.0)


EXACT = Tolerance()
#: `--opt-in affinity`: fused operators sum and multiply in another order than the code they replace
AFFINITY = Tolerance(1e-5, "--opt-in affinity: fused operators round in another order")
#: a run that computes in a half-precision dtype (autocast, or half parameters), with the fused
#: operators rounding its intermediates in another order: the dtype's unit roundoff, relative
HALF_PRECISION = {"bfloat16": 2.0**-8, "float16": 2.0**-11}


def tolerance_for(opt_ins: tuple[str, ...] | list[str], precisions: Iterable[str] = ()) -> Tolerance:
    """The tolerance a run converted with these opt-ins is held to; `precisions`: the dtypes the
    runs computed in (`computes_in`), which loosen the affinity tolerance to a half dtype's."""
    if "affinity" not in opt_ins:
        return EXACT
    half = [dtype for dtype in HALF_PRECISION if dtype in set(precisions)]
    if not half:
        return AFFINITY
    coarsest = max(half, key=HALF_PRECISION.__getitem__)
    return Tolerance(
        HALF_PRECISION[coarsest],
        f"--opt-in affinity in {coarsest}: fused operators round {coarsest} intermediates in another order",
    )


def computes_in(*runs: dict[int, RankRecord]) -> set[str]:
    """The dtypes the runs computed in: their enabled autocasts' and their parameters'."""
    return {
        dtype
        for records in runs
        for record in records.values()
        for step in record.steps
        for dtype in (*step.autocast, *(param.dtype for param in step.params))
    }


def _param_difference(
    cpu: tuple[Param, ...], npu: tuple[Param, ...], sides: tuple[str, str] = SIDES, values: bool = True
) -> tuple[str, str] | None:
    """(parameter, why) of the first parameter that differs, or None.

    Parameters are matched by position (an optimizer's groups in order, each group's parameters in
    order: the same in both runs of one script), never by name: names can repeat (two root
    modules, each with a ``weight``), and a name is only what the message shows.
    """
    names = [p.name for p in cpu]
    for position, (mine, theirs) in enumerate(zip(cpu, npu)):
        label = (
            mine.name
            if names.count(mine.name) == 1
            else f"{mine.name} (parameter {position + 1} of the step)"
        )
        if (mine.shape, mine.dtype) != (theirs.shape, theirs.dtype):
            return mine.name, (
                f"parameter {label}: {mine.dtype}{list(mine.shape)} {sides[0]}, "
                f"{theirs.dtype}{list(theirs.shape)} {sides[1]}"
            )
        if values and mine.digest != theirs.digest:
            return mine.name, f"parameter {label} {mine.dtype}{list(mine.shape)} has different values"
    if len(cpu) > len(npu):
        missing = cpu[len(npu)].name
        return missing, f"parameter {missing} is missing from the converted run's step"
    if len(npu) > len(cpu):
        extra = npu[len(cpu)].name
        return extra, f"parameter {extra} is only in the converted run's step"
    return None


def compare_step(
    cpu: Step, npu: Step, sides: tuple[str, str] = SIDES, tolerance: Tolerance = EXACT
) -> Difference | None:
    """How two runs' records of the same step and rank differ, or None when alike under `tolerance`."""
    loss = None
    if len(cpu.losses) != len(npu.losses) or not all(map(tolerance.same, cpu.losses, npu.losses)):
        pairs = [(a, b) for a, b in zip(cpu.losses, npu.losses) if not tolerance.same(a, b)]
        loss = pairs[0] if pairs else (_losses_text(cpu.losses), _losses_text(npu.losses))
    param = _param_difference(cpu.params, npu.params, sides, values=tolerance.exact)
    if loss is None and param is None:
        return None
    parts = []
    if loss is not None:
        parts.append(f"loss {loss[0]!r} {sides[0]}, {loss[1]!r} {sides[1]}")
    if param is not None:
        parts.append(param[1])
    return Difference(cpu.number, cpu.rank, "; ".join(parts), loss, param[0] if param else None)


def _losses_text(losses: tuple[float | str, ...]) -> str:
    return f"{len(losses)} backward() call(s)"


def first_difference(
    cpu: dict[int, RankRecord],
    npu: dict[int, RankRecord],
    sides: tuple[str, str] = SIDES,
    tolerance: Tolerance = EXACT,
) -> Difference | None:
    """The earliest step (then lowest rank) at which the runs differ beyond `tolerance`, among
    steps both recorded."""
    found: list[Difference] = []
    for rank in sorted(set(cpu) & set(npu)):
        for mine, theirs in zip(cpu[rank].steps, npu[rank].steps):
            difference = compare_step(mine, theirs, sides, tolerance)
            if difference is not None:
                found.append(difference)
                break
    return min(found, key=lambda d: (d.step, d.rank)) if found else None


def step_count_difference(
    cpu: dict[int, RankRecord], npu: dict[int, RankRecord], sides: tuple[str, str] = SIDES
) -> Difference | None:
    """The first rank whose two runs made different numbers of steps, or None."""
    for rank in sorted(set(cpu) | set(npu)):
        mine = len(cpu[rank].steps) if rank in cpu else 0
        theirs = len(npu[rank].steps) if rank in npu else 0
        if mine != theirs:
            return Difference(
                min(mine, theirs) + 1,
                rank,
                f"rank {rank} made {mine} step(s) {sides[0]} and {theirs} {sides[1]}",
            )
    return None
