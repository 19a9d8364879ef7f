"""Operator support check: ops reaching the simulated npu against torch_npu's kernel list.

Configuration (environment):

* ``RUNTIME_SHIM_RELEASE``: torch version of the list to check against: the
  releases of ``data/releases.json``, the same as the converter's ``-v`` (default
  the newest); a release without its own operator list uses the nearest one's.
* ``RUNTIME_SHIM_OPCHECK``: ``warn`` (default; one warning per op, in the
  wording of torch_npu's CPU-fallback warning), ``error`` (raise, like
  ``TORCH_NPU_FALLBACK_CPU_DISABLE=1``, which is honoured too) or ``off``.
* ``RUNTIME_SHIM_OPCHECK_REPORT``: path of a report written at exit, JSON or CSV
  by extension: every op that reached the device with its call count, whether
  the release supports it, and its first call site in user code. Processes of
  one run (DDP ranks, spawned children, DataLoader workers) merge into one
  report; ``RUNTIME_SHIM_OPCHECK_REPORT_PER_PROCESS=1`` gives each its own.

* ``RUNTIME_SHIM_OPCHECK_DTYPES``: which dtypes the dtype check reports when the
  release's API docs do not list them for an op: ``wide`` (default: float64 and
  complex, which the NPU lacks for many ops), ``all`` (every dtype the docs leave
  out, bfloat16 and integer ones too: the docs omit some that run) or ``off``.

Ops are seen at the level torch_npu dispatches them. An op torch_npu has a
kernel for is recorded as itself even where PyTorch decomposes it on the CPU
(``lstm.input``, ``scaled_dot_product_attention``, ``matmul``, ...): what the
simulation calls to compute it is not recorded. Other backends' internal
kernels (``mkldnn_*``, ``cudnn_*``, ``miopen_*``, ``_nnpack_*``) are never
reported as unsupported: a real NPU never reaches them.

Caveats of the source data, applied here: CompositeImplicitAutograd ops are
not listed unless torch_npu has its own kernel for them, so other composite ops
are checked by the ops they decompose into; ``_foreach_*`` ops run through
generic per-tensor kernels on NPU, so they count as supported.
"""

from __future__ import annotations

import atexit
import csv
import json
import os
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime_shim.backend.dispatch import add_npu_level_op, flush_counts, rearm, remove_npu_level_ops
from runtime_shim.diagnostics.csv_cells import cell, plain
from runtime_shim.runtime.state import STATE
from runtime_shim.torch_version import data_file

MODES = ("warn", "error", "off")

# Ops that are the simulated device's own plumbing: they exist on every
# backend (a real NPU performs them in its runtime, not through an operator
# kernel listed by op-plugin), so reporting them would only be noise.
_PLUMBING = {
    "empty.memory_format",
    "empty_strided",
    "_copy_from",
    "_copy_from_and_resize",
    "copy_",
    "set_",
    "set_.source_Storage",
    "set_.source_Storage_storage_offset",
    "set_.source_Tensor",
    "resize_",
    "as_strided",
    "view",
    "_reshape_alias",
    "_local_scalar_dense",
    "record_stream",
    "_to_copy",
    "alias",
    "unfold",
    "is_pinned",
    "_pin_memory",
}


# Kernels of other backends: a real NPU dispatches the op above them (torch_npu's own
# lstm, convolution, attention, ...), so one seen here is the simulation's CPU path.
_BACKEND_INTERNAL_PREFIXES = ("mkldnn_", "_mkldnn_", "_nnpack_", "cudnn_", "_cudnn_", "miopen_", "_miopen_")
# Composite ops torch_npu lists that get no recording kernel here: contiguous runs
# around nearly every op and __ior__ is plain Python-level sugar, both decompose into
# listed ops only; scaled_dot_product_attention and the recurrent layers have kernels
# of their own (patches/torch_npu_api.py, backend/rnn.py) that record them.
_NOT_WRAPPED = {"contiguous", "__ior__.Scalar", "__ior__.Tensor", "scaled_dot_product_attention"}
DTYPE_MODES = ("wide", "all", "off")
_WIDE_DTYPES = frozenset({"fp64", "complex64", "complex128"})
_DTYPE_LABELS = {
    "torch.float16": "fp16",
    "torch.float32": "fp32",
    "torch.float64": "fp64",
    "torch.bfloat16": "bf16",
    "torch.uint8": "uint8",
    "torch.int8": "int8",
    "torch.int16": "int16",
    "torch.int32": "int32",
    "torch.int64": "int64",
    "torch.bool": "bool",
    "torch.complex64": "complex64",
    "torch.complex128": "complex128",
}


class NpuOperatorNotSupported(RuntimeError):
    """Raised in ``error`` mode for an op (or an op's dtype) the selected release does not support."""


@dataclass
class Release:
    """One shipped operator list, with the dtypes its docs list per operator name."""

    torch: str
    torch_npu: str
    ops: frozenset[str]
    provenance: dict[str, Any] = field(default_factory=dict)
    dtypes: dict[str, frozenset[str]] = field(default_factory=dict)
    # the torch version the operator list was made for: another one when `torch` has none
    ops_torch: str = ""

    @property
    def label(self) -> str:
        """How messages name the list checked against, and the release it stands in for."""
        ops_torch = self.ops_torch or self.torch
        own = f"torch_npu {self.torch_npu} for torch {ops_torch}"
        return own if ops_torch == self.torch else f"{own}, the nearest list to torch {self.torch}"


_data_file = data_file


def available_releases() -> list[str]:
    """Torch versions with a shipped operator list, newest first."""
    index = json.loads(_data_file("releases.json").read_text(encoding="utf-8"))
    return [entry["torch"] for entry in reversed(index["releases"])]  # the file lists oldest first


def load_release(torch_version: str | None = None) -> Release:
    """Load the operator list for ``torch_version`` (default: newest shipped)."""
    index = json.loads(_data_file("releases.json").read_text(encoding="utf-8"))
    wanted = torch_version or index["default"]
    for entry in index["releases"]:
        if entry["torch"] == wanted:
            text = _data_file(entry["file"]).read_text(encoding="utf-8")
            ops = frozenset(line for line in text.splitlines() if line and not line.startswith("#"))
            dtypes: dict[str, frozenset[str]] = {}
            if entry.get("dtypes_file"):
                for line in _data_file(entry["dtypes_file"]).read_text(encoding="utf-8").splitlines():
                    if line and not line.startswith("#"):
                        name, *labels = line.split()
                        dtypes[name] = frozenset(labels)
            return Release(entry["torch"], entry["torch_npu"], ops, entry, dtypes, entry.get("ops_torch", ""))
    choices = ", ".join(e["torch"] for e in index["releases"])
    raise ValueError(f"RUNTIME_SHIM_RELEASE={wanted} is not a shipped release (choices: {choices})")


def is_backend_internal(op: str) -> bool:
    """Whether ``op`` is another backend's internal kernel (mkldnn, cudnn, miopen, nnpack, ``*_for_cpu``)."""
    return op.startswith(_BACKEND_INTERNAL_PREFIXES) or "_for_cpu" in op


def _stem(op: str) -> str:
    base = op.split(".", 1)[0]
    return base[:-1] if base.endswith("_") and not base.endswith("__") else base


def documented_dtypes(op: str, release: Release) -> frozenset[str] | None:
    """Dtypes the release's docs list for ``op`` (by operator name), or None if they list none."""
    return release.dtypes.get(_stem(op))


def dtype_label(args: tuple[Any, ...]) -> str | None:
    """Short dtype name (``fp64``) of the first tensor among ``args`` (or in a list there).

    None for a zero-dim first tensor: scalar bookkeeping such as GradScaler's float64
    reciprocal of its scale, which PyTorch itself does on every NPU training step.
    """
    import torch

    for arg in args:
        if isinstance(arg, (list, tuple)):
            arg = next((a for a in arg if isinstance(a, torch.Tensor)), None)
        if isinstance(arg, torch.Tensor):
            return _DTYPE_LABELS.get(str(arg.dtype)) if arg.dim() else None
    return None


def is_supported(op: str, release: Release) -> bool:
    """Whether ``op`` (``name.overload``) runs on the NPU in ``release``."""
    if op in release.ops or op in _PLUMBING or is_backend_internal(op):
        return True
    base = op.split(".", 1)[0]
    if base.startswith("_foreach_"):
        return True
    # torch_npu lists an overload-less name for ops whose only overload is
    # "default"; the dispatcher reports those without a suffix too.
    if base == op and f"{op}.default" in release.ops:
        return True
    # Structured ops: the functional and in-place forms (gelu, gelu_, add.Tensor, add_.Tensor)
    # delegate to the out= kernel, and torch_npu generates them from it when it lists only that.
    overload = op.split(".", 1)[1] if "." in op else ""
    stem = base[:-1] if base.endswith("_") and not base.endswith("__") else base
    if overload in ("", "default", "Tensor") and f"{stem}.out" in release.ops:
        return True
    return bool(overload) and f"{stem}.{overload}_out" in release.ops


class OpChecker:
    """Called on the first use of each op; keeps first call sites for the report.

    Ops with documented dtypes that leave out a checked dtype are called on every use
    (their device count is moved here), so each new dtype they see is checked once.
    """

    def __init__(self, release: Release, mode: str, report: str | None, dtype_mode: str = "wide") -> None:
        if mode not in MODES:
            raise ValueError(f"RUNTIME_SHIM_OPCHECK={mode} is not one of: {', '.join(MODES)}")
        if dtype_mode not in DTYPE_MODES:
            raise ValueError(
                f"RUNTIME_SHIM_OPCHECK_DTYPES={dtype_mode} is not one of: {', '.join(DTYPE_MODES)}"
            )
        self.release = release
        self.mode = mode
        self.report = report
        self.run = run_key() if report else ""
        self.dtype_mode = dtype_mode
        self.first_sites: dict[str, str] = {}
        self.seen: set[str] = set()
        self.counts: dict[str, int] = {}
        #: op -> {dtype label: first call site} for calls with a dtype the docs leave out.
        self.bad_dtypes: dict[str, dict[str, str]] = {}
        self._dtype_rules: dict[str, frozenset[str] | None] = {}

    def _dtype_rule(self, op: str) -> frozenset[str] | None:
        """The documented dtypes of ``op`` if checking them can report something, else None."""
        if op in self._dtype_rules:
            return self._dtype_rules[op]
        rule = None
        active = self.mode != "off" or self.report is not None
        if active and self.dtype_mode != "off" and not (op in _PLUMBING or is_backend_internal(op)):
            documented = documented_dtypes(op, self.release)
            checked = set(_DTYPE_LABELS.values()) if self.dtype_mode == "all" else _WIDE_DTYPES
            if documented is not None and not checked <= documented:
                rule = documented
        self._dtype_rules[op] = rule
        return rule

    def first_call(self, op: str, args: tuple[Any, ...] = ()) -> None:
        """Check ``op`` once (and each new dtype of it): warn, raise, or remember where it came from."""
        counter = STATE.op_counts.get(op)
        rule = self._dtype_rule(op)
        if rule is not None and counter is not None:
            counter[0] = 0
            self.counts[op] = self.counts.get(op, 0) + 1
            self._check_dtype(op, args, rule)
        if op in self.seen:
            return
        self.seen.add(op)
        if self.report is not None:
            self.first_sites[op] = user_call_site()
        if self.mode == "off" or is_supported(op, self.release):
            return
        if self.mode == "error":
            # Forget the call so the next use of the op is checked (and refused) again.
            self.seen.discard(op)
            if counter is not None:
                counter[0] = 0
            raise NpuOperatorNotSupported(
                f"The operator 'aten::{op}' is not currently supported on the NPU backend "
                f"({self.release.label}) and CPU "
                "fallback is disabled (runtime_shim opcheck mode 'error')"
            )
        warnings.warn(
            f"The operator 'aten::{op}' is not currently supported on the NPU backend and will "
            f"fall back to run on the CPU. This may have performance implications. "
            f"(runtime_shim: checked against {self.release.label})",
            UserWarning,
            stacklevel=2,
        )

    def add_checked_calls(self, op: str, calls: int) -> None:
        """Count ``calls`` calls of ``op`` the check let pass unseen (see calls_to_see)."""
        self.counts[op] = self.counts.get(op, 0) + calls

    def calls_to_see(self, op: str) -> list[Any] | None:
        """The dtypes of ``op``'s calls this check still has to see (None: every call).

        Asked after a call that zeroed the op's count (the check looks at each call's dtype):
        in the ``wide`` dtype mode, once the op has been seen, only calls whose first tensor has a wide dtype the docs leave out and that was not reported
        yet can change what it reports. The native kernels skip the hook for the others.
        """
        import torch

        if op not in self.seen or self.dtype_mode != "wide":
            return None
        rule = self._dtype_rule(op)
        if rule is None:
            return None
        reported = self.bad_dtypes.get(op, {})
        labels = {label for label in _WIDE_DTYPES if label not in rule and label not in reported}
        return [
            getattr(torch, name.split(".", 1)[1]) for name, label in _DTYPE_LABELS.items() if label in labels
        ]

    def _check_dtype(self, op: str, args: tuple[Any, ...], documented: frozenset[str]) -> None:
        label = dtype_label(args)
        if label is None or label in documented or label in self.bad_dtypes.get(op, {}):
            return
        if self.dtype_mode == "wide" and label not in _WIDE_DTYPES:
            return
        if self.mode == "off":
            if self.report is not None:
                self.bad_dtypes.setdefault(op, {})[label] = user_call_site()
            return
        listed = " ".join(sorted(documented))
        if self.mode == "error":
            raise NpuOperatorNotSupported(
                f"The operator 'aten::{op}' does not support dtype {label} on the NPU backend "
                f"(the torch {self.release.torch} API docs list: {listed}; "
                "runtime_shim opcheck mode 'error')"
            )
        self.bad_dtypes.setdefault(op, {})[label] = user_call_site()
        warnings.warn(
            f"The operator 'aten::{op}' is called with dtype {label}, which the NPU backend does not "
            f"support for it (documented: {listed}). "
            f"(runtime_shim: checked against {self.release.label})",
            UserWarning,
            stacklevel=3,
        )

    def status(self, op: str) -> str:
        """``supported``, ``unsupported``, ``unsupported_dtype`` or ``backend_internal``."""
        if is_backend_internal(op):
            return "backend_internal"
        if not is_supported(op, self.release):
            return "unsupported"
        return "unsupported_dtype" if self.bad_dtypes.get(op) else "supported"

    def rows(self) -> list[dict[str, Any]]:
        """One row per op that reached the device, most called first."""
        rows: list[dict[str, Any]] = []
        flush_counts()
        for op, counter in STATE.op_counts.items():
            count = counter[0] + self.counts.get(op, 0)
            if count == 0:
                continue
            rows.append(
                {
                    "op": op,
                    "count": count,
                    "supported": is_supported(op, self.release),
                    "status": self.status(op),
                    "unsupported_dtypes": " ".join(sorted(self.bad_dtypes.get(op, {}))),
                    "first_call_site": self.first_sites.get(op, ""),
                }
            )
        rows.sort(key=lambda r: (-r["count"], r["op"]))
        return rows

    def write_report(self, path: str | None = None) -> Path | None:
        """Write the JSON or CSV report (by file extension), merged with what other
        processes of the same run (DDP ranks, spawned children, DataLoader workers)
        already wrote there."""
        target = path or self.report
        if not target:
            return None
        out = Path(target)
        with _directory_lock(out.parent):
            rows = _merge_rows(_rows_of_run(out, self.run), self.rows())
            pids = sorted({*_pids_of_run(out, self.run), os.getpid()})
            partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
            if out.suffix.lower() == ".csv":
                with partial.open("w", encoding="utf-8", newline="") as fh:
                    writer = csv.DictWriter(fh, fieldnames=list(_FIELDS))
                    writer.writeheader()
                    writer.writerows({name: cell(value) for name, value in row.items()} for row in rows)
                _run_marker(out).write_text(
                    json.dumps({"run": self.run, "pids": pids}) + "\n", encoding="utf-8"
                )
            else:
                payload = {
                    "release": {
                        "torch": self.release.torch,
                        "torch_npu": self.release.torch_npu,
                        "ops_torch": self.release.ops_torch or self.release.torch,
                    },
                    "provenance": {k: v for k, v in self.release.provenance.items() if k.endswith("source")},
                    "run": self.run,
                    "pid": os.getpid(),
                    "pids": pids,
                    "ops": rows,
                }
                partial.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
            os.replace(partial, out)
        return out


RUN_ENV = "RUNTIME_SHIM_OPCHECK_RUN"


def run_key() -> str:
    """The run this process belongs to; processes of one run merge their reports.

    The first process of a run names it and exports the name, so spawned or forked
    children inherit it; torchrun's ranks are siblings and share their agent's pid.
    """
    key = os.environ.get(RUN_ENV)
    if not key:
        if os.environ.get("TORCHELASTIC_RUN_ID") is not None:
            key = f"torchrun:{os.getppid()}:{os.environ['TORCHELASTIC_RUN_ID']}"
        else:
            key = f"pid:{os.getpid()}:{time.time_ns()}"
        os.environ[RUN_ENV] = key
    return key


class _directory_lock:
    """An exclusive flock on a folder: report writers of one run take turns."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fd = -1

    def __enter__(self) -> None:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock, last writer wins
            return
        self.fd = os.open(self.folder, os.O_RDONLY)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing releases the lock


def _run_marker(report: Path) -> Path:
    """Where a CSV report keeps the run it belongs to (CSV has no place for it)."""
    return report.with_name(f".{report.name}.run")


def _run_record(report: Path) -> dict[str, Any]:
    """The run and pids an existing report was written by ({} when none or unreadable)."""
    source = _run_marker(report) if report.suffix.lower() == ".csv" else report
    try:
        record = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _pids_of_run(report: Path, run: str) -> list[int]:
    record = _run_record(report)
    return list(record.get("pids", ())) if record.get("run") == run else []


def _rows_of_run(report: Path, run: str) -> list[dict[str, Any]]:
    """Rows an earlier process of the same run wrote to ``report``; none from another run."""
    if not report.exists() or _run_record(report).get("run") != run:
        return []
    try:
        if report.suffix.lower() == ".csv":
            with report.open(encoding="utf-8", newline="") as fh:
                return [
                    {
                        **{name: plain(text) for name, text in row.items()},
                        "count": int(row["count"]),
                        "supported": row["supported"] == "True",
                    }
                    for row in csv.DictReader(fh)
                ]
        return list(json.loads(report.read_text(encoding="utf-8"))["ops"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _merge_rows(earlier: list[dict[str, Any]], mine: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Counts add up, dtypes unite, the earliest first call site stays."""
    merged = {row["op"]: dict(row) for row in earlier}
    for row in mine:
        seen = merged.get(row["op"])
        if seen is None:
            merged[row["op"]] = dict(row)
            continue
        seen["count"] = int(seen["count"]) + row["count"]
        dtypes = set(str(seen["unsupported_dtypes"]).split()) | set(row["unsupported_dtypes"].split())
        seen["unsupported_dtypes"] = " ".join(sorted(dtypes))
        if dtypes and seen["status"] == "supported":
            seen["status"] = "unsupported_dtype"
        seen["first_call_site"] = seen["first_call_site"] or row["first_call_site"]
    return sorted(merged.values(), key=lambda r: (-int(r["count"]), r["op"]))


_FIELDS = ("op", "count", "supported", "status", "unsupported_dtypes", "first_call_site")
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # runtime_shim/
_TORCH_ROOT: str | None = None


def user_call_site() -> str:
    """``file:line`` of the innermost stack frame outside torch and runtime_shim."""
    global _TORCH_ROOT
    if _TORCH_ROOT is None:
        import torch

        _TORCH_ROOT = os.path.dirname(os.path.abspath(torch.__file__))
    for frame in reversed(traceback.extract_stack()):
        filename = os.path.abspath(frame.filename)
        if filename.startswith((_PACKAGE_ROOT, _TORCH_ROOT)) or filename.startswith("<frozen"):
            continue
        if os.sep + "runpy.py" in filename or os.sep + "multiprocessing" + os.sep in filename:
            continue
        return f"{frame.filename}:{frame.lineno}"
    return "<internal>"


CHECKER: OpChecker | None = None


def configure(
    release: str | None = None, mode: str = "warn", report: str | None = None, dtypes: str = "wide"
) -> OpChecker:
    """Install an op checker on the simulated device (replacing any previous one)."""
    global CHECKER
    checker = OpChecker(load_release(release), mode, report, dtypes)
    flush_counts()  # calls counted natively so far belong to the previous checker
    CHECKER = checker
    STATE.on_first_call = checker.first_call
    rearm()  # the native kernels show the new checker each op's next call
    if mode != "off" or report:
        install_npu_level_ops(checker.release)
    if report:
        atexit.register(_write_at_exit, checker)
    return checker


def _write_at_exit(checker: OpChecker) -> None:
    if checker is CHECKER:
        try:
            checker.write_report()
        except OSError as exc:
            sys.stderr.write(f"runtime_shim: could not write op report: {exc}\n")


#: Ops given a recording kernel by install_npu_level_ops (tests check each one is transparent).
_NPU_LEVEL_OPS: set[str] = set()


def runs_decomposition(qualified: str) -> bool:
    """Whether the npu's autograd key of op ``qualified`` runs its CompositeImplicitAutograd kernel.

    Read from the dispatcher's computed table (``[math kernel]``), so an op with a derivative
    formula (``silu_backward``: an autograd kernel over the CPU kernel) or a kernel of the
    simulation's own (rnn.py) counts as not decomposed. Only such ops may be wrapped: the
    recording kernel runs that same decomposition, which is then what ran before.
    """
    import torch

    try:
        if not torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CompositeImplicitAutograd"):
            return False
        table = torch._C._dispatch_dump_table(qualified)
    except RuntimeError:  # an op this torch does not have
        return False
    for line in table.splitlines():
        if line.startswith("AutogradPrivateUse1:"):
            return line.rstrip().endswith("[math kernel]")
    return False


def install_npu_level_ops(release: Release) -> list[str]:
    """Give each composite op ``release`` has an NPU kernel for a kernel that records it.

    Only ops whose npu autograd key already runs PyTorch's decomposition are wrapped
    (``runs_decomposition``), and the wrapper runs that decomposition (``add_npu_level_op``):
    results and gradients are unchanged; only what the check sees differs. Ops an earlier
    release wrapped that this one has no kernel for are unwrapped: a check configured for another
    release sees them as that release's NPU would.
    """
    import torch

    stale = _NPU_LEVEL_OPS - release.ops
    if stale:
        remove_npu_level_ops(stale)
        _NPU_LEVEL_OPS.difference_update(stale)
    added = []
    for name in sorted(release.ops - _NPU_LEVEL_OPS - _NOT_WRAPPED):
        base, _, overload = name.partition(".")
        qualified = f"aten::{base}" + (f".{overload}" if overload and overload != "default" else "")
        if not runs_decomposition(qualified):
            continue
        try:
            op = getattr(getattr(torch.ops.aten, base), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        add_npu_level_op(name, op)
        _NPU_LEVEL_OPS.add(name)
        added.append(name)
    return added


def configure_from_env() -> OpChecker:
    """configure() from RUNTIME_SHIM_RELEASE / _OPCHECK / _OPCHECK_REPORT and
    TORCH_NPU_FALLBACK_CPU_DISABLE."""
    mode = os.environ.get("RUNTIME_SHIM_OPCHECK", "warn").strip().lower() or "warn"
    if os.environ.get("TORCH_NPU_FALLBACK_CPU_DISABLE", "").strip() in ("1", "true", "True"):
        mode = "error"
    report = os.environ.get("RUNTIME_SHIM_OPCHECK_REPORT") or None
    if report and os.environ.get("RUNTIME_SHIM_OPCHECK_REPORT_PER_PROCESS") == "1":
        stem, dot, ext = report.rpartition(".")
        report = f"{stem}.{os.getpid()}.{ext}" if dot else f"{report}.{os.getpid()}"
    dtypes = os.environ.get("RUNTIME_SHIM_OPCHECK_DTYPES", "wide").strip().lower() or "wide"
    return configure(os.environ.get("RUNTIME_SHIM_RELEASE") or None, mode, report, dtypes)


def reset_counts() -> None:
    """Forget call counts and first-call state (each op is checked again on next use)."""
    rearm()
    for counter in STATE.op_counts.values():
        counter[0] = 0
    if CHECKER is not None:
        CHECKER.first_sites.clear()
        CHECKER.seen.clear()
        CHECKER.counts.clear()
        CHECKER.bad_dtypes.clear()
