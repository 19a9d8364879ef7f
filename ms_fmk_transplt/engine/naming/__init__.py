"""Names and bindings: the light import-alias table, what a module binds other than by import,
how each name is used, and who owns a short name in a file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.naming.bindings import Bindings, NameClaims
    from ms_fmk_transplt.engine.naming.name_uses import NameUses
    from ms_fmk_transplt.engine.naming.names import (
        alias_table,
        assignment_aliases,
        build_dotted,
        chain_root,
        dotted,
        import_bindings,
        iter_imports,
        set_segments,
    )
    from ms_fmk_transplt.engine.naming.ownership import NameOwnership

__all__ = [
    "Bindings",
    "NameClaims",
    "NameOwnership",
    "NameUses",
    "alias_table",
    "assignment_aliases",
    "build_dotted",
    "chain_root",
    "dotted",
    "import_bindings",
    "iter_imports",
    "set_segments",
]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {
    "Bindings": "bindings",
    "NameClaims": "bindings",
    "NameOwnership": "ownership",
    "NameUses": "name_uses",
    "alias_table": "names",
    "assignment_aliases": "names",
    "build_dotted": "names",
    "chain_root": "names",
    "dotted": "names",
    "import_bindings": "names",
    "iter_imports": "names",
    "set_segments": "names",
}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
