"""Imports: what each imported name is bound to after the rewrites, the planning and insertion
of `import torch_npu`, and import statements rewritten and split keeping their layout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.importing.import_statements import ImportStatements
    from ms_fmk_transplt.engine.importing.imports import (
        add_needed_imports,
        plan_function_imports,
        plan_imports,
    )

__all__ = ["ImportStatements", "add_needed_imports", "plan_function_imports", "plan_imports"]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {
    "ImportStatements": "import_statements",
    "add_needed_imports": "imports",
    "plan_function_imports": "imports",
    "plan_imports": "imports",
}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
