"""The package's arrows run one way: rules -> engine, never back; the engine knows no CLI or report."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ms_fmk_transplt"

# what each part may not import (module-name prefixes)
FORBIDDEN = {
    "engine": (
        "ms_fmk_transplt.rules",
        "ms_fmk_transplt.cli",
        "ms_fmk_transplt.reports",
        "ms_fmk_transplt.run",
        "ms_fmk_transplt.pipeline",
        "typer",
        "rich",
        "openpyxl",
    ),
    "rules": (
        "ms_fmk_transplt.cli",
        "ms_fmk_transplt.reports",
        "ms_fmk_transplt.run",
        "ms_fmk_transplt.pipeline",
        "typer",
        "rich",
        "openpyxl",
    ),
    "distributed": ("ms_fmk_transplt.cli", "ms_fmk_transplt.reports", "typer", "rich", "openpyxl", "torch"),
    "reports": ("ms_fmk_transplt.engine", "ms_fmk_transplt.rules", "ms_fmk_transplt.cli", "typer", "rich"),
    # verify drives the runtime in subprocesses: it never imports torch or the runtime itself
    "verify": ("torch", "runtime_shim", "ms_fmk_transplt.cli", "typer", "rich"),
}


def _package_of(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])


def _imports(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a module of `package`, relative ones resolved."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_part_imports_nothing_it_must_not(part: str) -> None:
    bad = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for path in sorted((PACKAGE / part).rglob("*.py"))
        for line, name in _imports(path, _package_of(path))
        if any(name == p or name.startswith(p + ".") for p in FORBIDDEN[part])
    ]
    assert bad == []


def test_import_walk_sees_relative_and_absolute_forms(tmp_path: Path) -> None:
    """The checker itself: every spelling of a forbidden import is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ..rules import compile_rules\nimport ms_fmk_transplt.rules.loader\nfrom . import tables\n"
        "def f():\n    from ms_fmk_transplt.rules.registry import all_kinds\n"
    )
    assert {name for _, name in _imports(probe, "ms_fmk_transplt.engine")} == {
        "ms_fmk_transplt.rules.compile_rules",
        "ms_fmk_transplt.rules.loader",
        "ms_fmk_transplt.engine.tables",
        "ms_fmk_transplt.rules.registry.all_kinds",
    }


@pytest.mark.slow
def test_converting_a_file_loads_no_rules_module() -> None:
    code = (
        "import sys\n"
        "from ms_fmk_transplt.engine.convert import convert_source\n"
        "print(sorted(m for m in sys.modules if m.startswith('ms_fmk_transplt.rules')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
