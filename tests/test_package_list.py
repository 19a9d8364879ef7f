"""pyproject.toml lists its packages by hand (one is mapped from rules/builtin); every folder of
Python code in the two packages must be on that list, or the wheel ships without it (the
wheel test finds that only when the missing module is imported)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(sys.version_info < (3, 11), reason="reads pyproject.toml with tomllib (3.11+)")
def test_every_code_folder_is_a_listed_package() -> None:
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for top in ("ms_fmk_transplt", "runtime_shim")
        for path in (ROOT / top).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert folders - listed == set(), "folders of code missing from [tool.setuptools] packages"
    # shipped as data: the built-in rules (mapped from rules/builtin), C++ sources, support data
    data = {"ms_fmk_transplt.builtin_rules", "runtime_shim.csrc", "runtime_shim.data"}
    assert listed - folders - data == set(), "listed packages with no code"
