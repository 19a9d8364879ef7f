"""The conversion engine: pure functions from source bytes and compiled rules to results.

`conversion.convert_source` converts one file against `interface.Tables`. The engine never
imports the rules package: rule kinds compile into `Tables`
(``ms_fmk_transplt.ruleset.compile_rules``) and the engine only reads them.

The engine is in subpackages by concern, lowest first (each imports only packages before it;
tests/test_engine_packages.py holds the graph acyclic): `syntax`, `project`, `naming`, `devices`,
`interface`, `reporting`, `literals`, `importing`, `conversion`; ms_fmk_transplt/README.md maps
them. Outside a subpackage, code imports only its face (`from ms_fmk_transplt.engine.naming
import Bindings`), whose `__all__` names what it offers; tools/engine_layout.py keeps the layout
and the faces. A face reads each name from its module when it is used (`load_attribute`), and
this file imports none of the engine, so a light module such as `interface.rule` does not load libcst and a run
whose results all come from the cache loads no more of the engine than it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any


def load_attribute(package: str, homes: Mapping[str, str], name: str) -> Any:
    """A face's `name`, read from the module of `package` that `homes` says defines it.

    Read afresh at each use, never kept in the face: a face is a view of its modules, so a value
    replaced in its module (a test's monkeypatch) is the one every later import gets."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(import_module(f"{package}.{home}"), name)
