"""The conversion engine: pure functions from source bytes and compiled rules to results."""

from ms_fmk_transplt.engine.convert import convert_source, scan_text
from ms_fmk_transplt.engine.tables import Tables, compile_rules

__all__ = ["Tables", "compile_rules", "convert_source", "scan_text"]
