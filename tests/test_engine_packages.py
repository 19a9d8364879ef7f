"""The engine in parts: subpackages by concern, each with a face (`__init__.py` and its `__all__`).

- every engine module lives in a subpackage (tools/engine_layout.py places them);
- outside a subpackage, the package's code imports only its face, never a module inside it;
- the subpackages import one another in one direction: lowest first in tools/engine_layout.py's
  `PACKAGES`, so their graph has no circle;
- every name a face offers exists where it says, and a face loads nothing until a name is used.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from test_import_cycles import circles, import_graph

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "ms_fmk_transplt" / "engine"

#: module (dotted) -> why it may import a module inside another subpackage (none so far)
DEEP_IMPORTS_ALLOWED: dict[str, str] = {}


def _layout_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("engine_layout", ROOT / "tools" / "engine_layout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


LAYOUT = _layout_tool()
SUBPACKAGES = sorted(p.parent.name for p in ENGINE.glob("*/__init__.py"))


def _subpackage(module: str) -> str | None:
    """`engine.naming.bindings` -> naming; a module outside the engine's subpackages -> None."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["ms_fmk_transplt", "engine"] and len(parts) > 2 else None


def test_every_engine_module_is_in_a_subpackage() -> None:
    assert [p.name for p in ENGINE.glob("*.py")] == ["__init__.py"]
    assert sorted(LAYOUT.PACKAGES) == SUBPACKAGES
    placed = {p.stem: p.parent.name for p in ENGINE.glob("*/*.py") if p.stem != "__init__"}
    assert placed == LAYOUT.HOME


def test_outside_a_subpackage_only_its_face_is_imported() -> None:
    graph = import_graph()
    deep = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if _subpackage(target)
        and target.count(".") > 2  # a module inside a subpackage
        and _subpackage(module) != _subpackage(target)
        and module not in DEEP_IMPORTS_ALLOWED
    )
    assert deep == []
    assert set(DEEP_IMPORTS_ALLOWED) <= set(graph)


def _subpackage_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in SUBPACKAGES}
    for module, targets in import_graph().items():
        source = _subpackage(module)
        if source is None:
            continue
        graph[source] |= {t for t in map(_subpackage, targets) if t is not None and t != source}
    return graph


def test_subpackages_import_one_another_one_way() -> None:
    graph = _subpackage_graph()
    assert circles(graph) == []
    order = list(LAYOUT.PACKAGES)  # lowest first
    upward = sorted(
        f"{p} imports {q}" for p, qs in graph.items() for q in qs if order.index(q) > order.index(p)
    )
    assert upward == []
    assert graph["syntax"] == set() and graph["project"] == set()  # the ground floor
    assert "conversion" not in {q for qs in graph.values() for q in qs}  # the top


def _face(name: str) -> tuple[ModuleType, dict[str, str], set[str]]:
    """A face, its `_HOMES`, and the names its TYPE_CHECKING block imports."""
    face = importlib.import_module(f"ms_fmk_transplt.engine.{name}")
    tree = ast.parse((ENGINE / name / "__init__.py").read_text(encoding="utf-8"))
    (checking,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    typed = {
        alias.asname or alias.name
        for node in checking.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    return face, face._HOMES, typed


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_name_a_face_offers_exists(name: str) -> None:
    face, homes, typed = _face(name)
    assert face.__doc__, f"{name}: a face says what its package is for"
    assert set(face.__all__) == set(homes) == typed
    # importing a module binds its name in its package: a face offering that name would lose it
    assert not set(homes) & {p.stem for p in (ENGINE / name).glob("*.py")}
    for exported, module in homes.items():
        home = importlib.import_module(f"ms_fmk_transplt.engine.{name}.{module}")
        assert getattr(face, exported) is getattr(home, exported), (name, exported)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        face.__getattr__("no_such_name")


def test_a_face_loads_only_what_is_used() -> None:
    """A rule entry comes without libcst (a run served by the cache reads rules, never the tree)."""
    code = (
        "import sys\n"
        "import ms_fmk_transplt.engine.interface, ms_fmk_transplt.engine.conversion\n"
        "print(sorted(m for m in sys.modules if m.startswith('ms_fmk_transplt.engine.')))\n"
        "from ms_fmk_transplt.engine.interface import Rule\n"
        "print('libcst' in sys.modules, Rule.__module__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.splitlines() == [
        "['ms_fmk_transplt.engine.conversion', 'ms_fmk_transplt.engine.interface']",
        "False ms_fmk_transplt.engine.interface.rule",
    ]


def test_a_face_is_a_view_of_its_modules(monkeypatch) -> None:
    """A value replaced in its module is what the face gives from then on (imports at call time,
    such as pipeline's of `convert_source`, see a test's monkeypatch as they did before the faces)."""
    from ms_fmk_transplt.engine.conversion import convert

    def replaced() -> None: ...

    monkeypatch.setattr(convert, "convert_source", replaced)
    from ms_fmk_transplt.engine.conversion import convert_source

    assert convert_source is replaced


def test_the_layout_tool_spells_the_flat_layout_the_new_way() -> None:
    """What tools/engine_layout.py makes of a merged branch that still spells the flat engine."""
    layout = LAYOUT.read_layout(ROOT)
    flat = (
        "from ms_fmk_transplt.engine.hooks import CALLS, Site\n"
        "from ms_fmk_transplt.engine import convert, names\n"
        "import ms_fmk_transplt.engine.convert as convert_module\n"
        "def f():\n"
        "    from ms_fmk_transplt.engine.tables import Tables as T\n"
        'TARGET = "ms_fmk_transplt.engine.convert.module_bytes"  # see engine/convert.py\n'
    )
    expected = (
        "from ms_fmk_transplt.engine.interface import CALLS, Site\n"
        "from ms_fmk_transplt.engine.conversion import convert\n"
        "from ms_fmk_transplt.engine.naming import names\n"
        "import ms_fmk_transplt.engine.conversion.convert as convert_module\n"
        "def f():\n"
        "    from ms_fmk_transplt.engine.interface import Tables as T\n"
        'TARGET = "ms_fmk_transplt.engine.conversion.convert.module_bytes"  # see engine/conversion/convert.py\n'
    )

    def spell(text: str, rel: str) -> str:
        return LAYOUT.rewrite_text(LAYOUT.rewrite_imports(text, rel, layout), paths=True)

    assert spell(flat, "ms_fmk_transplt/run.py") == expected
    assert spell(expected, "ms_fmk_transplt/run.py") == expected  # idempotent
    # inside a subpackage, a sibling by its full path; a test takes the face when it offers the name
    inside = spell(
        "from ms_fmk_transplt.engine.hooks import Site\n", "ms_fmk_transplt/engine/interface/tables.py"
    )
    assert inside == "from ms_fmk_transplt.engine.interface.hooks import Site\n"
    private = spell("from ms_fmk_transplt.engine.dispatch import _own\n", "tests/test_x.py")
    assert private == "from ms_fmk_transplt.engine.syntax.dispatch import _own\n"
