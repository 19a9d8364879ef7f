"""The simulated NPU's operator-check report (runtime_shim/diagnostics/opcheck.py, JSON or CSV), read so that
the workbook can hold the run-time evidence beside the static findings (its "Runtime ops" sheet).

Only the report's file format is shared with the runtime; nothing of it is imported.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ms_fmk_transplt.records import RuntimeOp

FIELDS = ("op", "count", "supported", "status", "unsupported_dtypes", "first_call_site")


class RuntimeReportError(ValueError):
    """A runtime report that cannot be read; the message names the file and the place."""


def load_runtime_report(path: Path) -> tuple[RuntimeOp, ...]:
    """The ops of an operator-check report, in its order (most called first)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuntimeReportError(f"{path}: cannot read the runtime report: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RuntimeReportError(f"{path}: not UTF-8 text") from None
    if path.suffix.lower() == ".csv":
        rows: list[Any] = list(csv.DictReader(text.splitlines()))
        where = "row {}"
        first = 2
    else:
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise RuntimeReportError(f"{path}: not a JSON runtime report: {exc}") from None
        if not isinstance(document, dict) or not isinstance(document.get("ops"), list):
            raise RuntimeReportError(f"{path}: /ops: a runtime report lists its ops under /ops")
        rows = document["ops"]
        where = "/ops/{}"
        first = 0
    return tuple(_op(path, where.format(i), row) for i, row in enumerate(rows, first))


def _op(path: Path, where: str, row: Any) -> RuntimeOp:
    if not isinstance(row, dict) or not isinstance(row.get("op"), str) or not row["op"]:
        raise RuntimeReportError(f"{path}: {where}: needs an op name")
    try:
        count = int(row.get("count", 0))
    except (TypeError, ValueError):
        raise RuntimeReportError(f"{path}: {where}/count: not a number: {row.get('count')!r}") from None
    return RuntimeOp(
        op=row["op"],
        count=count,
        status=str(row.get("status") or ""),
        unsupported_dtypes=str(row.get("unsupported_dtypes") or ""),
        first_call_site=str(row.get("first_call_site") or ""),
    )
