"""One meaning per name (issue 47): within a package, no two modules share a basename and no two
top-level classes or type aliases share a name, unless they are the same concept in parallel parts
(listed below, each with why)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ms_fmk_transplt", "runtime_shim")

#: basename -> why its modules are one concept in parallel parts
PARALLEL_MODULES = {
    "runtime_shim": {
        # the patch layer holds the torch patches of a concept that lives in a lower layer
        "findings.py": "diagnostics/findings.py and the torch patches it needs, patches/findings.py",
        "step_record.py": "diagnostics/step_record.py and its patch of torch.autograd.backward",
        "storage.py": "runtime/storage.py (npu storages) and patches/storage.py (torch.UntypedStorage's)",
        # the stand-ins mirror the module paths of the libraries they stand in for
        "amp.py": "apex.amp (apex_stub/amp.py) and torch.npu.amp (autocast/amp.py)",
    },
    "ms_fmk_transplt": {},
}
#: class or alias name -> why the definitions are one concept
PARALLEL_NAMES: dict[str, dict[str, str]] = {
    "ms_fmk_transplt": {
        "Advisor": "engine/interface/tables.py's protocol and advice/'s one implementation of it",
    },
    "runtime_shim": {},
}


def _modules(package: str) -> list[Path]:
    return [
        p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts and "_boot" not in p.parts
    ]


def _top_level_names(path: Path) -> list[str]:
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            # a CamelCase name bound at the top level is a type alias (`Hit = tuple[...]`)
            if isinstance(target, ast.Name) and target.id[:1].isupper() and not target.id.isupper():
                names.append(target.id)
    return names


@pytest.mark.parametrize("package", PACKAGES)
def test_module_basenames_have_one_meaning(package: str) -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in _modules(package):
        if path.name not in ("__init__.py", "__main__.py"):
            seen[path.name].append(str(path.relative_to(ROOT / package)))
    repeated = {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1}
    assert set(repeated) - set(PARALLEL_MODULES[package]) == set(), repeated
    assert set(PARALLEL_MODULES[package]) <= set(repeated), "a listed parallel that no longer repeats"


@pytest.mark.parametrize("package", PACKAGES)
def test_class_and_alias_names_have_one_meaning(package: str) -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in _modules(package):
        for name in _top_level_names(path):
            seen[name].append(str(path.relative_to(ROOT / package)))
    repeated = {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1}
    assert set(repeated) - set(PARALLEL_NAMES[package]) == set(), repeated
    assert set(PARALLEL_NAMES[package]) <= set(repeated), "a listed parallel that no longer repeats"
