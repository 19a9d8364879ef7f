"""The simulated NPU's reports, read so that the workbook can hold the run-time evidence beside the
static findings: the operator-check report (runtime_shim/diagnostics/opcheck.py, JSON or CSV; the
"Runtime ops" sheet) or the findings report (runtime_shim/diagnostics/findings.py, JSON with the
top-level key ``runtime_findings``; the "Runtime findings" sheet).

Only the report's file format is shared with the runtime; nothing of it is imported.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ms_fmk_transplt.records import RuntimeFinding, RuntimeOp
from ms_fmk_transplt.reports.csv_cells import plain

FIELDS = ("op", "count", "supported", "status", "unsupported_dtypes", "first_call_site")
REQUIRED = ("op", "count", "status")  # what the workbook shows of each op, and cannot guess
STATUSES = ("supported", "unsupported", "unsupported_dtype", "backend_internal")
#: the findings report's top-level key, and the kinds of finding it holds
FINDINGS_KEY = "runtime_findings"
FINDING_KINDS = ("cuda_call", "cuda_device", "amp_disabled", "nccl", "dynamic_shapes")


class RuntimeReportError(ValueError):
    """A runtime report that cannot be read; the message names the file and the place."""


def load_runtime_evidence(path: Path) -> dict[str, Any]:
    """The RunResult fields of a runtime report: ``runtime_ops`` of an operator-check report, or
    ``runtime_findings`` of a findings report (told apart by its top-level key)."""
    if path.suffix.lower() != ".csv":
        document = _json_document(path, _text(path))
        if isinstance(document, dict) and FINDINGS_KEY in document:
            return {"runtime_findings": _findings(path, document[FINDINGS_KEY])}
    return {"runtime_ops": load_runtime_report(path)}


def _text(path: Path) -> str:
    try:
        # a spreadsheet's BOM is not part of the header; bytes, not read_text, whose newline
        # translation would turn a carriage return inside a quoted cell into a line feed
        return path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise RuntimeReportError(f"{path}: cannot read the runtime report: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RuntimeReportError(f"{path}: not UTF-8 text") from None


def _json_document(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise RuntimeReportError(f"{path}: not a JSON runtime report: {exc}") from None


def load_runtime_report(path: Path) -> tuple[RuntimeOp, ...]:
    """The ops of an operator-check report, in its order (most called first)."""
    text = _text(path)
    if path.suffix.lower() == ".csv":
        return tuple(_op(path, row, partial(_csv_place, n)) for n, row in _csv_rows(path, text))
    document = _json_document(path, text)
    if not isinstance(document, dict) or not isinstance(document.get("ops"), list):
        raise RuntimeReportError(f"{path}: /ops: a runtime report lists its ops under /ops")
    return tuple(_op(path, row, partial(_json_place, i)) for i, row in enumerate(document["ops"]))


def _csv_place(row: int, column: str) -> str:
    return f"row {row}, column {column}" if column else f"row {row}"


def _json_place(index: int, key: str) -> str:
    return f"/ops/{index}/{key}" if key else f"/ops/{index}"


def _csv_rows(path: Path, text: str) -> list[tuple[int, dict[str, str]]]:
    """(row number, values by column) of a CSV report; its header is row 1 and must hold REQUIRED."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = next(reader, None)
        if not header:
            raise RuntimeReportError(
                f"{path}: row 1: no header; a runtime report's columns: {', '.join(FIELDS)}"
            )
        missing = [name for name in REQUIRED if name not in header]
        if missing:
            raise RuntimeReportError(
                f"{path}: row 1: no column {', '.join(missing)}; a runtime report's columns: {', '.join(FIELDS)}"
            )
        for number, values in enumerate(reader, 2):
            if not values:  # a blank line
                continue
            if len(values) != len(header):
                raise RuntimeReportError(
                    f"{path}: row {number}: {len(values)} values for {len(header)} columns"
                )
            # the runtime writes a cell a spreadsheet would take for a formula with a leading '
            rows.append((number, dict(zip(header, map(plain, values), strict=True))))
    except csv.Error as exc:
        raise RuntimeReportError(f"{path}: row {reader.line_num}: not CSV: {exc}") from None
    return rows


def _op(path: Path, row: Any, where: Callable[[str], str]) -> RuntimeOp:
    """One op of a report row (a JSON object, or a CSV row's text by column)."""
    if not isinstance(row, dict):
        raise RuntimeReportError(f"{path}: {where('')}: not an object")
    if not isinstance(row.get("op"), str) or not row["op"]:
        raise RuntimeReportError(f"{path}: {where('')}: needs an op name")
    count = row.get("count")
    if isinstance(count, str) and count.isdigit() and count.isascii():  # CSV holds text
        count = int(count)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise RuntimeReportError(f"{path}: {where('count')}: not a count (0 or more): {_spell(count)}")
    status = row.get("status")
    if status not in STATUSES:
        raise RuntimeReportError(
            f"{path}: {where('status')}: {_spell(status)} is not one of {', '.join(STATUSES)}"
        )
    return RuntimeOp(
        op=row["op"],
        count=count,
        status=status,
        unsupported_dtypes=str(row.get("unsupported_dtypes") or ""),
        first_call_site=str(row.get("first_call_site") or ""),
    )


def _spell(value: Any) -> str:
    """A value as its report wrote it: JSON's words for JSON values (null, true), CSV text quoted."""
    return json.dumps(value, ensure_ascii=False)


def _findings(path: Path, document: Any) -> tuple[RuntimeFinding, ...]:
    """The findings of a findings report's ``/runtime_findings`` object, in its order."""
    if not isinstance(document, dict) or not isinstance(document.get("findings"), list):
        raise RuntimeReportError(
            f"{path}: /{FINDINGS_KEY}/findings: a findings report lists its findings under /{FINDINGS_KEY}/findings"
        )
    return tuple(
        _finding(path, row, f"/{FINDINGS_KEY}/findings/{i}") for i, row in enumerate(document["findings"])
    )


def _finding(path: Path, row: Any, where: str) -> RuntimeFinding:
    if not isinstance(row, dict):
        raise RuntimeReportError(f"{path}: {where}: not an object")
    kind = row.get("kind")
    if kind not in FINDING_KINDS:
        raise RuntimeReportError(
            f"{path}: {where}/kind: {_spell(kind)} is not one of {', '.join(FINDING_KINDS)}"
        )
    if not isinstance(row.get("what"), str) or not row["what"]:
        raise RuntimeReportError(f"{path}: {where}/what: needs a text saying what was found")
    count = row.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise RuntimeReportError(f"{path}: {where}/count: not a count (0 or more): {_spell(count)}")
    texts = {}
    for key in ("dependency_site", "user_site"):
        value = row.get(key)
        if value is not None and not isinstance(value, str):
            raise RuntimeReportError(f"{path}: {where}/{key}: not a file:line text or null: {_spell(value)}")
        texts[key] = value or ""
    shapes = row.get("shapes", [])
    if not isinstance(shapes, list) or not all(isinstance(s, str) for s in shapes):
        raise RuntimeReportError(f"{path}: {where}/shapes: not a list of texts: {_spell(shapes)}")
    distinct = row.get("distinct_shapes", 0)
    if not isinstance(distinct, int) or isinstance(distinct, bool) or distinct < 0:
        raise RuntimeReportError(
            f"{path}: {where}/distinct_shapes: not a count (0 or more): {_spell(distinct)}"
        )
    return RuntimeFinding(
        kind, row["what"], count, texts["dependency_site"], texts["user_site"], tuple(shapes), distinct
    )
