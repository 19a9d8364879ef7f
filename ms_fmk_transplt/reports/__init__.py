"""Report writers: pure functions of a RunResult, each returning the file's bytes (or, for the
log and report.json around a kept body, the pieces the file is written from)."""

from ms_fmk_transplt.reports.text import (
    change_list_csv,
    log_around,
    log_body,
    log_text,
    summary_around,
    summary_body,
    summary_json,
)
from ms_fmk_transplt.reports.xlsx import unsupported_xlsx

__all__ = [
    "change_list_csv",
    "log_around",
    "log_body",
    "log_text",
    "summary_around",
    "summary_body",
    "summary_json",
    "unsupported_xlsx",
]
