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
        "ms_fmk_transplt.ruleset",
        "ms_fmk_transplt.cli",
        "ms_fmk_transplt.reports",
        "ms_fmk_transplt.run",
        "ms_fmk_transplt.pipeline",
        "click",
        "rich",
        "openpyxl",
    ),
    "ruleset": (
        "ms_fmk_transplt.cli",
        "ms_fmk_transplt.reports",
        "ms_fmk_transplt.run",
        "ms_fmk_transplt.pipeline",
        "click",
        "rich",
        "openpyxl",
    ),
    "distributed": ("ms_fmk_transplt.cli", "ms_fmk_transplt.reports", "click", "rich", "openpyxl", "torch"),
    # advice is asked by the engine through engine/interface/tables.py's Advisor; it writes no report
    "advice": (
        "ms_fmk_transplt.ruleset",
        "ms_fmk_transplt.cli",
        "ms_fmk_transplt.reports",
        "ms_fmk_transplt.run",
        "ms_fmk_transplt.pipeline",
        "click",
        "rich",
        "openpyxl",
        "torch",
    ),
    "reports": ("ms_fmk_transplt.engine", "ms_fmk_transplt.ruleset", "ms_fmk_transplt.cli", "click", "rich"),
    # verify drives the runtime in subprocesses: it never imports torch or the runtime itself
    "verify": ("torch", "runtime_shim", "ms_fmk_transplt.cli", "click", "rich"),
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
        "from ...ruleset import compile_rules\nimport ms_fmk_transplt.ruleset.loader\nfrom . import tables\n"
        "def f():\n    from ms_fmk_transplt.ruleset.registry import all_kinds\n"
    )
    assert {name for _, name in _imports(probe, "ms_fmk_transplt.engine.interface")} == {
        "ms_fmk_transplt.ruleset.compile_rules",
        "ms_fmk_transplt.ruleset.loader",
        "ms_fmk_transplt.engine.interface.tables",
        "ms_fmk_transplt.ruleset.registry.all_kinds",
    }


@pytest.mark.slow
def test_converting_a_file_loads_no_rules_module() -> None:
    code = (
        "import sys\n"
        "from ms_fmk_transplt.engine.conversion.convert import convert_source\n"
        "print(sorted(m for m in sys.modules if m.startswith('ms_fmk_transplt.ruleset')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------- runtime_shim's layers

RUNTIME = PACKAGE.parent / "runtime_shim"


def _runtime_modules() -> list[Path]:
    return sorted(RUNTIME.rglob("*.py"))


def _library_calls(tree: ast.AST) -> list[int]:
    """Lines that construct a dispatcher library (``torch.library.Library(...)``, ``Library(...)``)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "Library")
            or (isinstance(node.func, ast.Name) and node.func.id == "Library")
        )
    ]


# runtime_shim's layers, lowest first (as OpenReg: the backend on the runtime, the Python API on
# both, then what patches torch and watches it, installed by activate(); entry points on top).
# A module imports from its own layer or below, at module level or inside a function alike.
RUNTIME_LAYERS = (
    ("runtime", "not_simulated", "torch_version"),
    ("backend",),
    ("autocast",),
    ("npu",),
    ("patches", "diagnostics"),
    ("activate",),
    ("torch_npu_stub", "apex_stub", "__init__", "__main__", "_boot"),
)


def _runtime_layer(module: str) -> int:
    """The layer of a runtime_shim module (``runtime_shim.backend.rnn`` -> the backend's)."""
    part = [*module.split("."), "__init__"][1]
    (layer,) = [i for i, parts in enumerate(RUNTIME_LAYERS) if part in parts]
    return layer


def test_runtime_layers_point_down() -> None:
    upward = []
    for path in _runtime_modules():
        module = ".".join(path.relative_to(RUNTIME.parent).with_suffix("").parts)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for line, name in _imports(path, package.removesuffix(".__init__")):
            if name.startswith("runtime_shim.") and _runtime_layer(name) > _runtime_layer(module):
                upward.append(f"{path.relative_to(RUNTIME.parent)}:{line} imports {name}")
    assert upward == []


def test_every_runtime_part_has_a_layer() -> None:
    parts = {
        p.stem if p.is_file() else p.name
        for p in RUNTIME.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    parts |= {p.name for p in RUNTIME.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert parts == {part for layer in RUNTIME_LAYERS for part in layer}
    assert _runtime_layer("runtime_shim.runtime.distributed") < _runtime_layer(
        "runtime_shim.backend.libraries"
    )
    assert _runtime_layer("runtime_shim") == _runtime_layer("runtime_shim.torch_npu_stub.contrib")


def test_one_module_makes_every_dispatcher_library() -> None:
    made = [
        f"{path.relative_to(RUNTIME.parent)}:{line}"
        for path in _runtime_modules()
        for line in _library_calls(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert [site.rsplit(":", 1)[0] for site in made] == ["runtime_shim/backend/libraries.py"], made
    text = "".join(path.read_text(encoding="utf-8") for path in _runtime_modules())
    assert text.count("torch.library.Library(") == 1


def test_the_library_table_names_each_purpose_it_holds() -> None:
    """libraries.py's docstring lists exactly the purposes the runtime makes libraries for."""
    import re

    from runtime_shim.backend import libraries

    made = set()
    for path in _runtime_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "make"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "libraries"
            ):
                (purpose, *_) = node.args
                assert isinstance(purpose, ast.Constant), f"{path}: a purpose that is not a literal"
                made.add(purpose.value)
    listed = set(re.findall(r"^\* ``(\w+)``(?: and ``(\w+)``)?:", libraries.__doc__ or "", re.M))
    assert made == {name for pair in listed for name in pair if name}


def _root(node: ast.AST) -> str | None:
    """The name an attribute chain starts from (``torch`` for ``torch.Tensor.to``), else None."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _torch_names(tree: ast.AST) -> set[str]:
    """Names bound to torch or to an object reached from it by attributes, anywhere in a module."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {
                (alias.asname or alias.name).split(".")[0]
                for alias in node.names
                if alias.name == "torch" or alias.name.startswith("torch.")
            }
        elif (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").split(".")[0] == "torch"
            and not node.level
        ):
            names |= {alias.asname or alias.name for alias in node.names}
    while True:  # x = torch.UntypedStorage; y = x.size ... (attribute chains only, not call results)
        more = {
            target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and _root(node.value) in names
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        if more <= names:
            return names
        names |= more


def torch_assignments(source: str) -> list[int]:
    """Lines that assign to (or delete) an attribute of a torch object, or setattr/delattr one."""
    tree = ast.parse(source)
    torch_names = _torch_names(tree)
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
            and _root(node.args[0]) in torch_names
        ):
            lines.append(node.lineno)
        flat = [t for target in targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        lines += [node.lineno for t in flat if isinstance(t, ast.Attribute) and _root(t) in torch_names]
    return sorted(lines)


def test_only_patches_assign_to_torch() -> None:
    found = {
        path.relative_to(RUNTIME.parent).as_posix(): torch_assignments(path.read_text(encoding="utf-8"))
        for path in _runtime_modules()
    }
    outside = {path: lines for path, lines in found.items() if lines and "/patches/" not in path}
    assert outside == {}
    # the walk sees the patches where they are
    assert found["runtime_shim/patches/storage.py"] and found["runtime_shim/patches/fsdp.py"]


def test_torch_assignment_walk_sees_every_spelling() -> None:
    probe = (
        "import torch\n"
        "import torch.distributed as dist\n"
        "from torch.distributed.fsdp import _init_utils\n"
        "torch.Tensor.to = f\n"  # 4
        "dist.is_hccl_available = f\n"  # 5
        "_init_utils._move = f\n"  # 6
        "cls = torch.UntypedStorage\n"
        "cls.__new__ = f\n"  # 8
        "setattr(torch.nn.Module, 'x', f)\n"  # 9
        "torch.version.cann: object = None\n"  # 10
        "def g(storage, module):\n"
        "    storage._binding = 1\n"  # an object made at run time: not torch's
        "    setattr(module, 'x', 1)\n"
        "    t = torch.empty(1)\n"
        "    t.x = 1\n"  # a call's result is not torch's own object
    )
    assert torch_assignments(probe) == [4, 5, 6, 8, 9, 10]


def test_engine_names_no_rule_kind() -> None:
    """The engine asks rules for capabilities (`Rule.support_list`, hooks); it never tests a kind's name."""
    from ms_fmk_transplt.ruleset.registry import all_kinds

    names = set(all_kinds())
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.value}"
        for path in sorted((PACKAGE / "engine").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in names
    ]
    assert found == []


def test_engine_shape() -> None:
    """No class over 300 lines in either package; the transformer module under 400 lines and
    keeping no node-id containers (helpers hold node-keyed answers: engine/naming/name_uses.py)."""
    too_long = [
        f"{path.relative_to(PACKAGE.parent)}:{node.name} {node.end_lineno - node.lineno + 1} lines"
        for package in (PACKAGE, PACKAGE.parent / "runtime_shim")
        for path in sorted(package.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno >= 300
    ]
    assert too_long == []
    transformer = (PACKAGE / "engine" / "conversion" / "transformer.py").read_text(encoding="utf-8")
    assert len(transformer.splitlines()) < 400
    assert "set[int]" not in transformer and "dict[int," not in transformer and "id(" not in transformer


def test_the_transformer_needs_no_field_callbacks() -> None:
    """engine/syntax/dispatch.py skips libcst's `visit_<Node>_<field>` / `leave_<Node>_<field>` lookups:
    no class of the engine may define one (it would never be called). The node callbacks it
    caches are the engine's own, never libcst's do-nothing stubs."""
    import inspect
    import re

    from ms_fmk_transplt.engine.conversion import ModuleRewriter
    from ms_fmk_transplt.engine.syntax import CachedDispatch

    field_callback = re.compile(r"(visit|leave)_[A-Z][A-Za-z]*_[a-z_]+$")
    assert issubclass(ModuleRewriter, CachedDispatch)
    from ms_fmk_transplt.engine.syntax.dispatch import _own

    assert _own(ModuleRewriter, "leave_Call") is ModuleRewriter.leave_Call
    assert _own(ModuleRewriter, "leave_Add") is None and _own(ModuleRewriter, "visit_Lambda") is None
    defined = [
        f"{owner.__name__}.{name}"
        for owner in ModuleRewriter.__mro__
        if owner.__module__.startswith("ms_fmk_transplt")
        for name, _ in inspect.getmembers(owner, inspect.isfunction)
        if field_callback.match(name) and name in vars(owner)
    ]
    assert defined == []
