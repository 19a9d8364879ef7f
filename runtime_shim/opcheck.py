"""Operator support check: ops reaching the simulated npu against torch_npu's kernel list.

Configuration (environment):

* ``RUNTIME_SHIM_RELEASE``: torch version of the list to check against
  (``2.12.0``, ``2.7.1``, ``2.1.0``; default the newest shipped).
* ``RUNTIME_SHIM_OPCHECK``: ``warn`` (default; one warning per op, in the
  wording of torch_npu's CPU-fallback warning), ``error`` (raise, like
  ``TORCH_NPU_FALLBACK_CPU_DISABLE=1``, which is honoured too) or ``off``.
* ``RUNTIME_SHIM_OPCHECK_REPORT``: path of a report written at exit, JSON or CSV
  by extension: every op that reached the device with its call count, whether
  the release supports it, and its first call site in user code.

Caveats of the source data, applied here: CompositeImplicitAutograd ops are
not listed because they decompose, so only ops that actually reach the device
are checked (never the composite ones); ``_foreach_*`` ops run through generic
per-tensor kernels on NPU, so they count as supported.
"""

from __future__ import annotations

import atexit
import csv
import json
import os
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from runtime_shim._compat import data_file
from runtime_shim.device import STATE

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


class NpuOperatorNotSupported(RuntimeError):
    """Raised in ``error`` mode for an op the selected release has no NPU kernel for."""


@dataclass
class Release:
    """One shipped operator list."""

    torch: str
    torch_npu: str
    ops: frozenset[str]
    provenance: dict = field(default_factory=dict)


_data_file = data_file


def available_releases() -> list[str]:
    """Torch versions with a shipped operator list, newest first."""
    index = json.loads(_data_file("releases.json").read_text(encoding="utf-8"))
    return [entry["torch"] for entry in index["releases"]]


def load_release(torch_version: str | None = None) -> Release:
    """Load the operator list for ``torch_version`` (default: newest shipped)."""
    index = json.loads(_data_file("releases.json").read_text(encoding="utf-8"))
    wanted = torch_version or index["default"]
    for entry in index["releases"]:
        if entry["torch"] == wanted:
            text = _data_file(entry["file"]).read_text(encoding="utf-8")
            ops = frozenset(line for line in text.splitlines() if line and not line.startswith("#"))
            return Release(entry["torch"], entry["torch_npu"], ops, entry)
    choices = ", ".join(e["torch"] for e in index["releases"])
    raise ValueError(f"RUNTIME_SHIM_RELEASE={wanted} is not a shipped release (choices: {choices})")


def is_supported(op: str, release: Release) -> bool:
    """Whether ``op`` (``name.overload``) runs on the NPU in ``release``."""
    if op in release.ops or op in _PLUMBING:
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
    """Called on the first use of each op; keeps first call sites for the report."""

    def __init__(self, release: Release, mode: str, report: str | None) -> None:
        if mode not in MODES:
            raise ValueError(f"RUNTIME_SHIM_OPCHECK={mode} is not one of: {', '.join(MODES)}")
        self.release = release
        self.mode = mode
        self.report = report
        self.first_sites: dict[str, str] = {}

    def first_call(self, op: str) -> None:
        """Check ``op`` once: warn, raise, or just remember where it came from."""
        if self.report is not None:
            self.first_sites[op] = user_call_site()
        if self.mode == "off" or is_supported(op, self.release):
            return
        if self.mode == "error":
            # Forget the call so the next use of the op is checked (and refused) again.
            STATE.op_counts[op][0] = 0
            raise NpuOperatorNotSupported(
                f"The operator 'aten::{op}' is not currently supported on the NPU backend "
                f"(torch_npu {self.release.torch_npu} for torch {self.release.torch}) and CPU "
                "fallback is disabled (runtime_shim opcheck mode 'error')"
            )
        warnings.warn(
            f"The operator 'aten::{op}' is not currently supported on the NPU backend and will "
            f"fall back to run on the CPU. This may have performance implications. "
            f"(runtime_shim: checked against torch_npu {self.release.torch_npu} for torch {self.release.torch})",
            UserWarning,
            stacklevel=2,
        )

    def rows(self) -> list[dict]:
        """One row per op that reached the device, most called first."""
        rows = []
        for op, counter in STATE.op_counts.items():
            if counter[0] == 0:
                continue
            rows.append(
                {
                    "op": op,
                    "count": counter[0],
                    "supported": is_supported(op, self.release),
                    "first_call_site": self.first_sites.get(op, ""),
                }
            )
        rows.sort(key=lambda r: (-r["count"], r["op"]))
        return rows

    def write_report(self, path: str | None = None) -> Path | None:
        """Write the JSON or CSV report (by file extension)."""
        target = path or self.report
        if not target:
            return None
        out = Path(target)
        rows = self.rows()
        if out.suffix.lower() == ".csv":
            with out.open("w", encoding="utf-8", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=["op", "count", "supported", "first_call_site"])
                writer.writeheader()
                writer.writerows(rows)
        else:
            payload = {
                "release": {"torch": self.release.torch, "torch_npu": self.release.torch_npu},
                "provenance": {k: v for k, v in self.release.provenance.items() if k.endswith("source")},
                "pid": os.getpid(),
                "ops": rows,
            }
            out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        return out


_PACKAGE_ROOT = os.path.dirname(os.path.abspath(__file__))
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


def configure(release: str | None = None, mode: str = "warn", report: str | None = None) -> OpChecker:
    """Install an op checker on the simulated device (replacing any previous one)."""
    global CHECKER
    checker = OpChecker(load_release(release), mode, report)
    CHECKER = checker
    STATE.on_first_call = checker.first_call
    if report:
        atexit.register(_write_at_exit, checker)
    return checker


def _write_at_exit(checker: OpChecker) -> None:
    if checker is CHECKER:
        try:
            checker.write_report()
        except OSError as exc:
            sys.stderr.write(f"runtime_shim: could not write op report: {exc}\n")


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
    return configure(os.environ.get("RUNTIME_SHIM_RELEASE") or None, mode, report)


def reset_counts() -> None:
    """Forget call counts and first-call state (each op is checked again on next use)."""
    for counter in STATE.op_counts.values():
        counter[0] = 0
    if CHECKER is not None:
        CHECKER.first_sites.clear()
