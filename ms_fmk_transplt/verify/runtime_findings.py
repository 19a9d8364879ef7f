"""The converted run's runtime findings (runtime_shim/diagnostics/findings.py): CUDA a dependency
still touches, operators whose shapes change per step. Switched on for the NPU run, read back,
their script lines mapped to the original, shown in the report. They never change the verdict.

Only the report's file format is shared with the runtime; nothing of it is imported.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ms_fmk_transplt.records import RuntimeFinding
from ms_fmk_transplt.reports.runtime import RuntimeReportError, load_runtime_evidence
from ms_fmk_transplt.verify.sites import original_site

ENV_REPORT = "RUNTIME_SHIM_FINDINGS_REPORT"
ENV_PROJECT = "RUNTIME_SHIM_FINDINGS_PROJECT"
TOP_KEY = "runtime_findings"
#: how the text report names each kind
LABELS = {
    "cuda_call": "CUDA still touched",
    "cuda_device": "CUDA still touched",
    "amp_disabled": "CUDA still touched",
    "nccl": "CUDA still touched",
    "dynamic_shapes": "dynamic shapes",
}
SHAPES_SHOWN = 3


def environment(report: Path, converted_root: Path) -> dict[str, str]:
    """What the NPU run's environment needs for the findings: the report's path and the project folder."""
    return {ENV_REPORT: str(report), ENV_PROJECT: str(converted_root)}


def read(report: Path, converted_root: Path, source_root: Path, cwd: Path) -> list[RuntimeFinding] | None:
    """The report's findings with their script lines in the original; None when it was not written
    or cannot be read (the reader is the workbook's, reports/runtime.py)."""
    try:
        rows = load_runtime_evidence(report).get(TOP_KEY)
    except (OSError, RuntimeReportError):
        return None
    if rows is None:
        return None
    return [
        replace(f, user_site=original_site(f.user_site, converted_root, source_root, cwd.resolve()))
        if f.user_site
        else f
        for f in rows
    ]


def text_lines(findings: list[RuntimeFinding] | None) -> list[str]:
    """The findings as report lines (none when there are none or no report was written). Dynamic
    shapes are one line per script line: its first operator with the shapes seen, then the others."""
    lines = []
    by_site: dict[str, list[RuntimeFinding]] = {}
    for f in findings or ():
        if f.kind == "dynamic_shapes":
            by_site.setdefault(f.user_site, []).append(f)
        else:
            lines.append(f"  {LABELS.get(f.kind, f.kind)}: {f.what} at {f.sites} (x{f.count})")
    for group in by_site.values():
        f = group[0]
        shown = " / ".join(f.shapes[:SHAPES_SHOWN])
        more = f" (+{f.distinct_shapes - SHAPES_SHOWN} more)" if f.distinct_shapes > SHAPES_SHOWN else ""
        others = f"; also {', '.join(g.what for g in group[1:])}" if len(group) > 1 else ""
        lines.append(f"  {LABELS['dynamic_shapes']}: {f.what} at {f.sites}, shapes {shown}{more}{others}")
    return lines


def document(findings: list[RuntimeFinding] | None) -> list[dict[str, Any]] | None:
    """The findings for the JSON document (None when no report was written)."""
    if findings is None:
        return None
    return [
        {
            "kind": f.kind,
            "what": f.what,
            "dependency_site": f.dependency_site or None,
            "user_site": f.user_site or None,
            "count": f.count,
            "shapes": list(f.shapes),
            "distinct_shapes": f.distinct_shapes,
        }
        for f in findings
    ]
