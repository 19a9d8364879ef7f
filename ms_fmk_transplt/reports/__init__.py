"""Report writers: pure functions of a RunResult, each returning the file's bytes."""

from ms_fmk_transplt.reports.text import (
    change_list_csv,
    log_body,
    log_text,
    log_with_body,
    summary_body,
    summary_json,
    summary_with_body,
)
from ms_fmk_transplt.reports.xlsx import unsupported_xlsx

__all__ = [
    "change_list_csv",
    "log_body",
    "log_text",
    "log_with_body",
    "summary_body",
    "summary_json",
    "summary_with_body",
    "unsupported_xlsx",
]
