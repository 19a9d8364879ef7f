"""What a person reads first: the counts that matter, the files with the most, where the reports are;
and the per-API view of the uses to check on the NPU. Shared by the xlsx, the log and the console.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ms_fmk_transplt.analysis import Issue, notes
from ms_fmk_transplt.records import RunResult, Support

SUPPORT_KIND = "ApiSupportRule"  # the kind whose findings are the release lists' verdicts
TOP_FILES = 5


def blocking(found: list[Issue]) -> list[Issue]:
    """The issues that will not run (or do nothing) on the NPU as written, by file, line, column."""
    rows = [issue for issue in found if issue.status.blocks]
    return sorted(rows, key=lambda i: (i.path, i.finding.start_line, i.finding.column, i.finding.rule_id))


def checks(found: list[Issue]) -> list[Issue]:
    """The issues to check on the NPU: partial or not verified, one per use."""
    return [issue for issue in found if not issue.status.blocks]


@dataclass
class ApiCheck:
    """One row of the Check on NPU sheet: every use of one API with one status."""

    api: str
    status: Support
    dtypes: str
    source: str
    suggestion: str
    rule: str
    first: str  # file:line of the first use
    files: list[str] = field(default_factory=list)
    # the same paths as a set: a list search per use made a large run's rows quadratic
    # (ModelZoo: 4.5 s for 343k uses)
    seen: set[str] = field(default_factory=set, repr=False, compare=False)
    uses: int = 0
    heuristic: int = 0  # uses matched by method name only


def by_api(found: list[Issue]) -> list[ApiCheck]:
    """The uses to check, one row per (API, status), most used first."""
    rows: dict[tuple[str, Support], ApiCheck] = {}
    for issue in checks(found):
        f = issue.finding
        key = (f.api or f.message, issue.status)
        row = rows.get(key)
        if row is None:
            row = rows[key] = ApiCheck(
                key[0],
                issue.status,
                f.dtypes,
                f.source,
                f.suggestion,
                f.rule_id,
                f"{issue.path}:{f.start_line}",
            )
        row.uses += 1
        row.heuristic += f.heuristic
        if issue.path not in row.seen:
            row.seen.add(issue.path)
            row.files.append(issue.path)
    return sorted(rows.values(), key=lambda r: (-r.uses, r.api, r.status.value))


def _n(count: int, word: str) -> str:
    """`1 place`, `3 places`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def kinds(run: RunResult) -> dict[str, str]:
    """Rule id -> rule kind, for the rules in effect."""
    return {rule_id: kind for rule_id, kind, _ in run.rules}


def headline(
    run: RunResult, found: list[Issue], reports: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    """(item, value) rows, most important first: what will not run, then what to check, then where.

    `reports` names each report written (label -> path), for the "where is it" rows.
    """
    kind = kinds(run)
    stop = blocking(found)
    api_uses = [
        i for i in stop if i.status is Support.UNSUPPORTED and kind.get(i.finding.rule_id) == SUPPORT_KIND
    ]
    cuda_only = [
        i for i in stop if i.status is Support.UNSUPPORTED and kind.get(i.finding.rule_id) != SUPPORT_KIND
    ]
    dtype = [i for i in stop if i.status is Support.DTYPE]
    no_effect = [i for i in stop if i.status is Support.NO_EFFECT]
    rows: list[tuple[str, str]] = [
        (
            "unsupported APIs",
            f"{_n(len({i.finding.api for i in api_uses}), 'API')} in {_n(len(api_uses), 'place')}"
            if api_uses
            else "none",
        ),
        ("CUDA-only code", _n(len(cuda_only), "place") if cuda_only else "none"),
        ("dtype outside a partial API's list", _n(len(dtype), "place") if dtype else "none"),
        ("no effect on the NPU (kept)", _n(len(no_effect), "place") if no_effect else "none"),
    ]
    by_file = Counter(i.path for i in stop if i.status is not Support.NO_EFFECT)
    most = sorted(by_file.items(), key=lambda item: (-item[1], item[0]))[:TOP_FILES]
    for rank, (path, count) in enumerate(most):
        rows.append(("files with the most" if rank == 0 else "", f"{count} in {path}"))
    apis = by_api(found)
    uses = sum(row.uses for row in apis)
    rows.append(("to check on the NPU", f"{_n(len(apis), 'API')} in {_n(uses, 'place')}" if apis else "none"))
    left = notes(run)
    if left:
        rows.append(
            ("notes to read", f"{_n(len(left), 'note')} on what the conversion left to you (sheet Notes)")
        )
    supported = sum(r.supported for r in run.files)
    by_kernel = sum(r.supported_by_kernel for r in run.files)
    rows.append(("supported uses (counted)", f"{supported} by the lists, {by_kernel} by an NPU kernel alone"))
    if run.runtime_findings is not None:
        found_kinds = sorted({f.kind for f in run.runtime_findings})
        rows.append(
            (
                "runtime findings",
                f"{_n(len(run.runtime_findings), 'finding')}{' (' + ', '.join(found_kinds) + ')' if found_kinds else ''}"
                f" (sheet Runtime findings, from {run.runtime_report})",
            )
        )
    elif run.runtime_report:
        failing = [o for o in run.runtime_ops if o.status in ("unsupported", "unsupported_dtype")]
        rows.append(
            (
                "ops the simulated NPU ran",
                f"{_n(len(run.runtime_ops), 'op')}, {len(failing)} unsupported or with an unsupported dtype"
                f" (sheet Runtime ops, from {run.runtime_report})",
            )
        )
    for label, path in (reports or {}).items():
        rows.append((label, path))
    return rows
