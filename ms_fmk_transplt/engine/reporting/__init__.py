"""Reports of sites: findings waiting for their positions, their messages, the support verdicts
of a release, and inline suppressions and fingerprints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.reporting.messages import join_clauses
    from ms_fmk_transplt.engine.reporting.pending import Pending
    from ms_fmk_transplt.engine.reporting.site_reports import SiteReports
    from ms_fmk_transplt.engine.reporting.support import (
        CASTS,
        DTYPE_WORDS,
        HOST_METHODS,
        INDEX_DTYPES,
        MOVE_METHODS,
        SupportClassifier,
        SupportJudge,
        aten_op,
        converted_name,
        on_host,
        operation_of,
    )
    from ms_fmk_transplt.engine.reporting.suppress import annotate

__all__ = [
    "CASTS",
    "DTYPE_WORDS",
    "HOST_METHODS",
    "INDEX_DTYPES",
    "MOVE_METHODS",
    "Pending",
    "SiteReports",
    "SupportClassifier",
    "SupportJudge",
    "annotate",
    "aten_op",
    "converted_name",
    "join_clauses",
    "on_host",
    "operation_of",
]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {
    "CASTS": "support",
    "DTYPE_WORDS": "support",
    "HOST_METHODS": "support",
    "INDEX_DTYPES": "support",
    "MOVE_METHODS": "support",
    "Pending": "pending",
    "SiteReports": "site_reports",
    "SupportClassifier": "support",
    "SupportJudge": "support",
    "annotate": "suppress",
    "aten_op": "support",
    "converted_name": "support",
    "join_clauses": "messages",
    "on_host": "support",
    "operation_of": "support",
}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
