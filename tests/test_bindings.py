"""Which names a module binds other than by import (engine/naming/bindings.py)."""

from __future__ import annotations

import libcst as cst

from ms_fmk_transplt.engine.naming.bindings import collect_bindings

SOURCE = """
import os.path
import numpy as np
from lib import func, other as o
from . import sibling

__all__ = ["func", "helper"]
a, (b, *c) = 1, (2, 3)
d: int = 4
e += 1
for f in []:
    pass
with open(p) as g:
    pass
try:
    pass
except ValueError as h:
    pass
[i for i in []]
if (j := 1):
    pass
del k


def helper(param, *args, **kwargs):
    global glob


class Model:
    def method(self):
        nonlocal_name = 1
"""


def test_every_kind_of_binding() -> None:
    found = collect_bindings(cst.parse_module(SOURCE))
    assert found.imported == {"os", "np", "func", "o", "sibling"}
    assert found.exported == {"func", "helper"}
    assert found.defined == {"helper", "Model", "method"}
    for name in ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "param", "args", "kwargs", "glob"):
        assert name in found.bound, name
    assert "func" not in found.bound and "np" not in found.bound
