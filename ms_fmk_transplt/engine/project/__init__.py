"""The project-wide pre-read: every module of the input tree read once with CPython's `ast`
(signatures, uses of other modules' values, re-exports), joined across modules, and the
`ProjectLayout` each file sees (which imports are the project's own). No libcst."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.project.first_party import POLICY, FirstParty, ProjectLayout, SignatureMemo
    from ms_fmk_transplt.engine.project.project_devices import ModuleFacts, Reach
    from ms_fmk_transplt.engine.project.project_index import Returned
    from ms_fmk_transplt.engine.project.project_results import CALLED, COMPARED
    from ms_fmk_transplt.engine.project.project_walk import OWN, relative

__all__ = [
    "CALLED",
    "COMPARED",
    "OWN",
    "POLICY",
    "FirstParty",
    "ModuleFacts",
    "ProjectLayout",
    "Reach",
    "Returned",
    "SignatureMemo",
    "relative",
]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {
    "CALLED": "project_results",
    "COMPARED": "project_results",
    "FirstParty": "first_party",
    "ModuleFacts": "project_devices",
    "OWN": "project_walk",
    "POLICY": "first_party",
    "ProjectLayout": "first_party",
    "Reach": "project_devices",
    "Returned": "project_index",
    "SignatureMemo": "first_party",
    "relative": "project_walk",
}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
