"""Report writers: pure functions of a RunResult, each returning the file's bytes."""

from ms_fmk_transplt.reports.text import change_list_csv, log_text, summary_json
from ms_fmk_transplt.reports.xlsx import unsupported_xlsx

__all__ = ["change_list_csv", "log_text", "summary_json", "unsupported_xlsx"]
