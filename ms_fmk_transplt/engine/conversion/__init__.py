"""One file's conversion: `convert_source` (bytes in, a `FileResult` out, never raising), the
ast fast path, notebooks and sources libcst misreads, and the one transformer with the bases
and helpers it asks (dispatch, fused patterns, generic hooks, results, guards, shell text)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.conversion.convert import convert_source, scan_text
    from ms_fmk_transplt.engine.conversion.notebook import CodeCells, code_cells, is_notebook
    from ms_fmk_transplt.engine.conversion.transformer import ModuleRewriter

__all__ = ["CodeCells", "ModuleRewriter", "code_cells", "convert_source", "is_notebook", "scan_text"]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {
    "CodeCells": "notebook",
    "ModuleRewriter": "transformer",
    "code_cells": "notebook",
    "convert_source": "convert",
    "is_notebook": "notebook",
    "scan_text": "convert",
}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
