"""Runtime findings: what a converted script still asks of CUDA, and operators whose shapes change.

A static converter cannot see inside the libraries a script imports. This module watches the
converted run on the simulated NPU and reports, at exit, to ``RUNTIME_SHIM_FINDINGS_REPORT``
(JSON; the processes of one run merge into one file, as the operator check's report does):

* ``cuda_call``: a public ``torch.cuda`` / ``torch.cuda.amp`` function called from outside torch
  (``is_available()`` included: a library that asks gets False and takes its CPU path);
* ``cuda_device``: a ``cuda`` device reached torch (a tensor made on or moved to it), seen where
  torch initialises CUDA lazily (``torch.cuda._lazy_init``, which the C++ side calls for each);
* ``amp_disabled``: a CUDA GradScaler or autocast turned itself off for lack of CUDA (torch's
  warning), so the script trains without loss scaling or mixed precision;
* ``nccl``: ``init_process_group`` / ``new_group`` asked for the nccl backend;
* ``dynamic_shapes``: an operator whose npu input shapes at one line of the script differ from
  one optimizer step to the next (diagnostics/shapes.py), in the first
  ``RUNTIME_SHIM_FINDINGS_SHAPE_STEPS`` steps (default 20; 0: every step).

Each finding names the frame that made the call outside torch and runtime_shim (the dependency)
and the innermost frame under the project folder (``RUNTIME_SHIM_FINDINGS_PROJECT``, default the
script's folder) that led there; findings are counted by (kind, what, sites). The patches are in
patches/findings.py. Under ``transfer_to_npu`` CUDA calls are answered by the npu on purpose and
are not findings.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

from runtime_shim.diagnostics.opcheck import _directory_lock, run_key

ENV_REPORT = "RUNTIME_SHIM_FINDINGS_REPORT"
ENV_PROJECT = "RUNTIME_SHIM_FINDINGS_PROJECT"
ENV_SHAPE_STEPS = "RUNTIME_SHIM_FINDINGS_SHAPE_STEPS"
#: the report's top-level key (``ms_fmk_transplt --runtime-report`` recognises the file by it)
TOP_KEY = "runtime_findings"
KINDS = ("cuda_call", "cuda_device", "amp_disabled", "nccl", "dynamic_shapes")
#: distinct shape signatures kept per dynamic-shape finding
SHAPES_KEPT = 6

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_TRANSFER_MODULE = "runtime_shim.torch_npu_stub.contrib.transfer_to_npu"
#: libraries whose frames only pass a call on (typing_extensions' @deprecated wraps torch.cuda.amp's
#: classes): never the dependency that made it
_PLUMBING = re.compile(r"[\\/](typing_extensions\.py|wrapt[\\/])")
_INSTALLED = re.compile(r"[\\/](site|dist)-packages[\\/]")


def _stdlib_roots() -> tuple[str, ...]:
    roots = {sysconfig.get_paths()[name] for name in ("stdlib", "platstdlib")}
    return tuple(os.path.abspath(root) + os.sep for root in roots)


class Sites:
    """Classifies stack frames: internal (torch, runtime_shim, the standard library), project, other."""

    def __init__(self, project: str | None) -> None:
        import torch

        self._project = os.path.abspath(project) + os.sep if project else None
        torch_root = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        self.internal = (_PACKAGE_ROOT, torch_root)
        self.stdlib = _stdlib_roots()
        self._kinds: dict[str, int] = {}  # filename -> 0 internal, 1 project, 2 other

    def kind(self, filename: str) -> int:
        """0: torch, runtime_shim or the standard library; 1: the project; 2: anything else."""
        known = self._kinds.get(filename)
        if known is None:
            path = os.path.abspath(filename)
            project = self._project or self._script_folder()
            if filename.startswith("<") or path.startswith(self.internal) or _PLUMBING.search(path):
                known = 0
            elif _INSTALLED.search(
                path
            ):  # a library, even where site-packages is under the stdlib (pyenv, conda)
                known = 2
            elif path.startswith(self.stdlib):
                known = 0
            elif project is not None and path.startswith(project):
                known = 1
            else:
                known = 2
            if project is not None:  # before the script runs, nothing is cached
                self._kinds[filename] = known
        return known

    def _script_folder(self) -> str | None:
        # the default project: the script's folder, known once `python -m runtime_shim` has handed
        # sys.argv to the script (until then sys.argv[0] is runtime_shim's own __main__)
        folder = os.path.dirname(os.path.abspath(sys.argv[0] or ".")) + os.sep
        if folder.startswith(_PACKAGE_ROOT):
            return None
        self._project = folder
        return folder

    def of_stack(self, depth: int = 1) -> tuple[str | None, str | None]:
        """(dependency site, user site) of the current stack: the innermost frame outside torch and
        runtime_shim when it is not the project's, and the innermost frame of the project."""
        frame: Any = sys._getframe(depth + 1)
        dependency: str | None = None
        while frame is not None:
            code = frame.f_code
            kind = self.kind(code.co_filename)
            if kind == 1:
                return dependency, f"{os.path.abspath(code.co_filename)}:{frame.f_lineno}"
            if kind == 2 and dependency is None:
                dependency = f"{os.path.abspath(code.co_filename)}:{frame.f_lineno}"
            frame = frame.f_back
        return dependency, None

    def caller_is_outside(self, depth: int = 1) -> bool:
        """Whether the function ``depth`` frames up was called from code outside torch and runtime_shim."""
        frame = sys._getframe(depth + 1)
        return self.kind(frame.f_code.co_filename) != 0


def short_path(site: str | None) -> str | None:
    """``/venv/lib/python3.11/site-packages/lib/x.py:40`` as ``site-packages/lib/x.py:40``: the path
    under the longest ``sys.path`` entry holding it, prefixed with that entry's name."""
    if site is None:
        return None
    path, _, line = site.rpartition(":")
    best = ""
    for entry in sys.path:
        root = os.path.abspath(entry or os.curdir)
        if path.startswith(root + os.sep) and len(root) > len(best):
            best = root
    if not best:
        return site
    return f"{os.path.basename(best)}/{os.path.relpath(path, best)}:{line}"


class Findings:
    """The CUDA findings of this process, counted by (kind, what, dependency site, user site)."""

    def __init__(self, project: str | None, report: str | None) -> None:
        self.sites = Sites(project)
        self.report = report
        # now, before any child starts: children inherit the run's key and merge into its report
        self.run = run_key() if report else ""
        self.counts: dict[tuple[str, str, str | None, str | None], int] = {}
        self.shapes: Any = None  # a shapes.ShapeRecorder once installed
        self._lock = threading.Lock()
        self._local = threading.local()

    def transfer_active(self) -> bool:
        """transfer_to_npu answers CUDA calls with the npu on purpose: nothing to report then."""
        return _TRANSFER_MODULE in sys.modules

    def add(self, kind: str, what: str, depth: int = 1) -> None:
        """Count one finding at the current stack (``depth`` frames above the caller are skipped)."""
        nested: int = getattr(self._local, "inside", 0)
        if nested or self.transfer_active():
            return
        dependency, user = self.sites.of_stack(depth + 1)
        key = (kind, what, dependency, user)
        with self._lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def inside(self, delta: int) -> None:
        """Enter (+1) or leave (-1) a reported call: what it does itself is not reported again."""
        self._local.inside = getattr(self._local, "inside", 0) + delta

    def rows(self) -> list[dict[str, Any]]:
        """This process's findings as report rows."""
        rows: list[dict[str, Any]] = [
            {
                "kind": kind,
                "what": what,
                "dependency_site": short_path(dependency),
                "dependency_path": dependency,
                "user_site": user,
                "count": count,
                "shapes": [],
            }
            for (kind, what, dependency, user), count in self.counts.items()
        ]
        if self.shapes is not None:
            rows += self.shapes.rows()
        return rows

    def write_report(self, path: str | None = None) -> Path | None:
        """Write the JSON report, merged with what earlier processes of the same run wrote there."""
        target = path or self.report
        if not target:
            return None
        out = Path(target)
        out.parent.mkdir(parents=True, exist_ok=True)
        run = self.run or run_key()
        with _directory_lock(out.parent):
            earlier = _document_of_run(out, run)
            document = {
                TOP_KEY: {
                    "version": 1,
                    "run": run,
                    "pids": sorted({*earlier.get("pids", ()), os.getpid()}),
                    "findings": merge_rows(earlier.get("findings", []), self.rows()),
                }
            }
            partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
            partial.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            os.replace(partial, out)
        return out


def _document_of_run(report: Path, run: str) -> dict[str, Any]:
    try:
        document = json.loads(report.read_text(encoding="utf-8"))[TOP_KEY]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return document if isinstance(document, dict) and document.get("run") == run else {}


def _row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["kind"], row["what"], row.get("dependency_path"), row.get("user_site"))


def merge_rows(earlier: list[dict[str, Any]], mine: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of several processes as one list: counts add up, shapes unite (at most SHAPES_KEPT)."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in [*earlier, *mine]:
        seen = merged.get(_row_key(row))
        if seen is None:
            merged[_row_key(row)] = {**row, "shapes": list(row.get("shapes", []))}
            continue
        seen["count"] = int(seen["count"]) + int(row["count"])
        for shape in row.get("shapes", []):
            if shape not in seen["shapes"] and len(seen["shapes"]) < SHAPES_KEPT:
                seen["shapes"].append(shape)
        if "distinct_shapes" in row:
            seen["distinct_shapes"] = max(int(seen.get("distinct_shapes", 0)), int(row["distinct_shapes"]))
    order = {kind: index for index, kind in enumerate(KINDS)}
    return sorted(
        merged.values(), key=lambda r: (order.get(r["kind"], len(order)), -int(r["count"]), str(r["what"]))
    )


FINDINGS: Findings | None = None


def configure(report: str | None, project: str | None = None, shape_steps: int | None = 20) -> Findings:
    """Start watching this process (once); the report is written at exit when ``report`` is set.
    Shapes are watched for ``shape_steps`` optimizer steps (0: all of them; None: not at all)."""
    global FINDINGS
    if FINDINGS is not None:
        return FINDINGS
    findings = FINDINGS = Findings(project, report)
    from runtime_shim.patches import findings as patch

    patch.install(findings)
    if shape_steps is not None:
        from runtime_shim.diagnostics.shapes import ShapeRecorder

        findings.shapes = ShapeRecorder(findings.sites, shape_steps)
        findings.shapes.start()
    if report:
        atexit.register(_write_at_exit, findings)
    return findings


def _write_at_exit(findings: Findings) -> None:
    try:
        findings.write_report()
    except OSError as exc:
        sys.stderr.write(f"runtime_shim: could not write the findings report: {exc}\n")


def configure_from_env() -> Findings | None:
    """configure() from RUNTIME_SHIM_FINDINGS_REPORT / _PROJECT; None when findings are off."""
    report = os.environ.get(ENV_REPORT)
    if not report:
        return None
    steps = os.environ.get(ENV_SHAPE_STEPS, "").strip()
    return configure(report, os.environ.get(ENV_PROJECT) or None, int(steps) if steps.isdigit() else 20)
