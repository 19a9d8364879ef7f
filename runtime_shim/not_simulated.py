"""What a stand-in module (``torch_npu``, ``apex``, ``torch.npu`` and their submodules) does with a
name it does not simulate: an AttributeError naming it.

An AttributeError, never NotImplementedError: ``hasattr``, ``getattr(m, name, None)`` and
``try: from m import X except ImportError`` are how clients probe for optional features, and
``from m import X`` turns the module's AttributeError into the ImportError those probes catch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

#: Every message ends with this, so tests and users can tell a gap of the simulation from a typo in torch.
SUFFIX = "is not simulated by runtime_shim"


def module_getattr(public_name: str) -> Callable[[str], NoReturn]:
    """A module-level ``__getattr__`` for the stand-in known to clients as ``public_name``."""

    def __getattr__(name: str) -> NoReturn:
        if name.startswith("__") and name.endswith("__"):
            # the import system, copy and pickle probe dunders; a plain miss, as for any module
            raise AttributeError(f"module {public_name!r} has no attribute {name!r}", name=name)
        raise AttributeError(f"{public_name}.{name} {SUFFIX}", name=name)

    return __getattr__
