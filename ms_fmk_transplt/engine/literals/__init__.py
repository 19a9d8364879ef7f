"""String literals: each one's role with its evidence (environment variable, prose, device,
key, ...), found before the rewrite, and the rewrite by role."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
    from ms_fmk_transplt.engine.literals.environment import Environment
    from ms_fmk_transplt.engine.literals.roles import POLICY, LiteralRoles, Role
    from ms_fmk_transplt.engine.literals.string_rewrites import LiteralRewrites

__all__ = ["POLICY", "Environment", "LiteralRewrites", "LiteralRoles", "Role"]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {
    "Environment": "environment",
    "LiteralRewrites": "string_rewrites",
    "LiteralRoles": "roles",
    "POLICY": "roles",
    "Role": "roles",
}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
