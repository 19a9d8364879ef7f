"""The records that flow from the engine to the writers and reports.

Everything here is frozen and picklable so that worker processes can return it.
"""

from __future__ import annotations

import enum
import operator
import pickle
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, overload


class Operation(str, enum.Enum):
    """What a finding did to the source, as named in change_list.csv."""

    INSERT = "INSERT"
    MODIFY = "MODIFY"
    DELETE = "DELETE"
    UNSUPPORTED = "UNSUPPORTED"
    CHECK = "CHECK"  # nothing changed: partially supported or not verified, for the user to check
    ADVICE = "ADVICE"  # nothing changed: runs on the NPU, a faster form exists (--advice)


class Status(str, enum.Enum):
    """The outcome for one input file."""

    CONVERTED = "converted"  # at least one rewrite applied
    UNCHANGED = "unchanged"  # Python file that needed no rewrite
    COPIED = "copied"  # not a Python source: copied byte-identical
    LINKED = "linked"  # a symlink reproduced inside the output tree
    FAILED = "failed"  # could not be converted: copied unchanged, reason given
    SKIPPED = "skipped"  # not reproduced at all (e.g. a symlink leaving the tree)


class Support(str, enum.Enum):
    """How the selected Ascend release supports an API use (the analysis reports' Status column)."""

    UNSUPPORTED = "unsupported"  # the release's support list marks it unsupported, or CUDA-only
    DTYPE = "unsupported-dtype"  # a partial API used, in the code as written, with a dtype it lacks
    NO_EFFECT = "no-effect"  # a CUDA knob kept as written: it runs and does nothing on the NPU
    PARTIAL = "partial"  # supported with a condition: some dtypes only (named), an argument it needs
    NOT_VERIFIED = "not-verified"  # absent from the release's lists, no NPU kernel found: we don't guess
    SUPPORTED = "supported"

    @property
    def blocks(self) -> bool:
        """Will not run (or not as meant) on the NPU as written: the reports' Unsupported sheet."""
        return self in (Support.UNSUPPORTED, Support.DTYPE, Support.NO_EFFECT)


@dataclass(frozen=True, slots=True)
class Finding:
    """One change or one report about a place in the original file.

    A large tree has hundreds of thousands of findings, most repeating a few hundred messages:
    slots keep each one small, and its texts are interned as it is made or unpickled (from a
    worker or the cache), so equal texts are held once (817 -> 276 bytes a finding, FileResults
    included, on timm and pytorch/examples).
    """

    rule_id: str
    operation: Operation
    start_line: int
    end_line: int
    message: str
    heuristic: bool = False
    noop: bool = False  # UNSUPPORTED but harmless: the line is kept and does nothing on the NPU
    column: int = 0  # 1-based column of the start in the original file; 0 when not known
    api: str = ""  # qualified name of the API the finding is about, when there is one
    support: Support | None = None  # set by support classification, None for other findings
    dtypes: str = ""  # the dtypes the release supports, for PARTIAL
    suggestion: str = ""  # what the user can do, composed once
    source: str = ""  # what decided the status: a support list, an NPU kernel, a rule
    suppressed: bool = False  # an inline `# ms_fmk_transplt: ignore[...]` comment covers it
    fingerprint: str = ""  # hash of the finding's first source line, whitespace-folded (baselines)

    def __post_init__(self) -> None:
        for name in _SHARED_TEXTS:
            value = getattr(self, name)
            if value:
                object.__setattr__(self, name, sys.intern(value))

    def __getstate__(self) -> tuple[Any, ...]:
        return _FINDING_STATE(self)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        # the slots' own setters, one by one: a warm run unpickles every finding of the tree (37k
        # on transformers); object.__setattr__ by name took a third longer than a loop over the
        # setters, and the loop ~25 % longer than this (tests/test_records.py checks the order)
        (rule_id, operation, start_line, end_line, message, heuristic, noop, column, api, support,
         dtypes, suggestion, source, suppressed, fingerprint) = state  # fmt: skip
        intern = sys.intern
        _set_rule_id(self, intern(rule_id) if rule_id else rule_id)
        _set_operation(self, operation)
        _set_start_line(self, start_line)
        _set_end_line(self, end_line)
        _set_message(self, intern(message) if message else message)
        _set_heuristic(self, heuristic)
        _set_noop(self, noop)
        _set_column(self, column)
        _set_api(self, intern(api) if api else api)
        _set_support(self, support)
        _set_dtypes(self, intern(dtypes) if dtypes else dtypes)
        _set_suggestion(self, intern(suggestion) if suggestion else suggestion)
        _set_source(self, intern(source) if source else source)
        _set_suppressed(self, suppressed)
        _set_fingerprint(self, fingerprint)


_FINDING_FIELDS = tuple(f.name for f in fields(Finding))
_FINDING_STATE = operator.attrgetter(*_FINDING_FIELDS)
# the texts findings repeat (a message per API, a rule's suggestion); positions and fingerprints differ
_SHARED_TEXTS = frozenset({"rule_id", "message", "api", "dtypes", "suggestion", "source"})
(
    _set_rule_id,
    _set_operation,
    _set_start_line,
    _set_end_line,
    _set_message,
    _set_heuristic,
    _set_noop,
    _set_column,
    _set_api,
    _set_support,
    _set_dtypes,
    _set_suggestion,
    _set_source,
    _set_suppressed,
    _set_fingerprint,
) = (Finding.__dict__[name].__set__ for name in _FINDING_FIELDS)


class PackedFindings(Sequence[Finding]):
    """A file's findings as the result cache keeps them, unpickled on first use.

    A warm run whose reports are all kept reads no finding (they are 37k on transformers, and
    unpickling them was a third of such a run); what reads them (a report written again, the
    summary table, a gate) unpickles a file's findings once. Compares, hashes and pickles as the
    tuple it stands for."""

    __slots__ = ("_count", "_items", "_packed")

    def __init__(self, packed: bytes, count: int) -> None:
        self._packed: bytes | None = packed
        self._count = count
        self._items: tuple[Finding, ...] | None = None

    def unpacked(self) -> tuple[Finding, ...]:
        """The findings themselves (a damaged pickle raises here as it would have in the cache)."""
        if self._items is None:
            assert self._packed is not None
            items = pickle.loads(self._packed)
            if not (isinstance(items, tuple) and len(items) == self._count):
                raise ValueError("packed findings do not match their count")
            self._items, self._packed = items, None
        return self._items

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Finding: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Finding, ...]: ...
    def __getitem__(self, index: int | slice) -> Finding | tuple[Finding, ...]:
        return self.unpacked()[index]

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.unpacked())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedFindings):
            other = other.unpacked()
        return self.unpacked() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.unpacked())

    def __repr__(self) -> str:
        return repr(self.unpacked())

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self.unpacked(),))


@dataclass(frozen=True, slots=True)
class FileResult:
    """The result of converting one file; positions refer to the original file."""

    path: str  # relative to the input root, POSIX separators
    status: Status
    findings: tuple[Finding, ...] | PackedFindings = ()  # packed: read from the result cache
    reason: str = ""  # why a file FAILED or was SKIPPED
    detail: str = ""  # for an internal error, the whole traceback (written to the log)
    output: bytes | None = None  # new content when CONVERTED, else None
    supported: int = 0  # API uses the release lists as supported: counted, not listed as findings
    supported_by_kernel: int = 0  # uses absent from the lists whose ATen operator has an NPU kernel

    @property
    def changed(self) -> bool:
        return self.output is not None


@dataclass(frozen=True)
class RuntimeOp:
    """One op the simulated NPU saw in a run of the converted script (its operator-check report)."""

    op: str
    count: int
    status: str  # supported, unsupported, unsupported_dtype, backend_internal
    unsupported_dtypes: str = ""
    first_call_site: str = ""  # file:line in the user's code


@dataclass(frozen=True)
class RuntimeFinding:
    """One finding of a converted run on the simulated NPU (its findings report): CUDA a dependency
    still touches, or an operator whose input shapes change per step."""

    kind: str  # cuda_call, cuda_device, amp_disabled, nccl, dynamic_shapes
    what: str
    count: int
    dependency_site: str = ""  # file:line of the library that made the call
    user_site: str = ""  # file:line in the user's code
    shapes: tuple[str, ...] = ()  # dynamic_shapes: the input shape signatures seen (the first few)
    distinct_shapes: int = 0  # dynamic_shapes: how many signatures were seen in all

    @property
    def sites(self) -> str:
        """``lib/x.py:40 <- train.py:12``, or the one known."""
        return " <- ".join(s for s in (self.dependency_site, self.user_site) if s) or "<unknown>"


@dataclass(frozen=True)
class AdviceFact:
    """One piece of performance advice in effect for a run (data/advice.json, for its release):
    what the ADVICE findings of that id found, what to use instead, when, what for, and the fact
    behind it in the Ascend data."""

    id: str
    found: str
    replacement: str
    condition: str
    gain: str
    source: str


@dataclass(frozen=True)
class RunResult:
    """Everything a report writer needs to know about one conversion run."""

    input_root: str
    output_root: str
    files: tuple[FileResult, ...]
    rule_files: tuple[str, ...] = ()
    release: str = ""
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()  # one line each, for the user: ignored cache, renamed report, ...
    rules: tuple[tuple[str, str, str], ...] = ()  # (id, kind, summary) of every rule in effect
    runtime_ops: tuple[RuntimeOp, ...] = ()  # a runtime operator-check report merged in (--runtime-report)
    runtime_report: str = ""  # where that report was read from
    runtime_findings: tuple[RuntimeFinding, ...] | None = None  # a findings report (--runtime-report)
    left_out: tuple[str, ...] = ()  # folders of the input holding an earlier run's output, not walked
    advice: tuple[AdviceFact, ...] = ()  # the advice catalogue in effect (--advice), empty without it

    @property
    def failed(self) -> tuple[FileResult, ...]:
        return tuple(f for f in self.files if f.status in (Status.FAILED, Status.SKIPPED))
