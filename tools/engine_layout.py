"""The engine's subpackages: move each engine module into its package and rewrite every import.

Run from anywhere in the repository, with the project's venv:
    .venv/bin/python tools/engine_layout.py [--check] [--engine-prose] [--no-ruff]
It is idempotent: run it again after merging a branch that still spells the flat layout
(`ms_fmk_transplt.engine.hooks`, `engine/hooks.py`) and it brings that branch's spellings here.

What it does, in order:
1. `git mv ms_fmk_transplt/engine/<module>.py ms_fmk_transplt/engine/<package>/` for every module of
   `PACKAGES` still at the top of the engine. A module it does not know is printed and left in
   place: add it to `PACKAGES` and run again.
2. Every import of an engine module in the repository's Python files (package, tests, bench,
   tools; at module level, in functions and under TYPE_CHECKING; absolute or relative) is
   spelled the new way. Inside a subpackage a module imports its siblings by their full path.
   Anywhere else in the package, it imports the subpackage's face (`from
   ms_fmk_transplt.engine.naming import Bindings`), and the name joins that face. Tests, bench and
   tools use the face when it exports every name they import, else the module's full path (they
   test private parts). `import ms_fmk_transplt.engine.X` keeps the module's full path.
3. Dotted module paths in any text (`"ms_fmk_transplt.engine.convert._convert"` as a
   monkeypatch target or a subprocess's code) and file paths (`engine/roles.py`) in the
   non-engine files, the maps and the shell scripts are spelled the new way; with
   `--engine-prose`, the file paths in the engine's own docstrings and comments too (left out by
   default so that a moved file differs from its original in import lines only, and git carries
   other branches' edits into it). docs/rules.md is regenerated when the docstrings it is made of
   changed; docs/benchmarks.md (a record of its days), fixtures and bench data are never edited.
4. Each subpackage's face (`__init__.py`) is written: its docstring kept (or the one below for a
   new package), then `__all__` (what it exported before, still defined, and every name the rest
   of the package imports from it), loaded lazily on first use (`engine.load_attribute`), so
   importing a face costs nothing and faces close no import circle.
5. ruff sorts the imports and formats the files it changed (`--no-ruff` to skip).
`--check` changes nothing and exits 1 when something would change.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ENGINE = "ms_fmk_transplt.engine"

#: package -> (its docstring for a new face, its modules). Listed lowest first: a package imports
#: only packages above it in this list (tests/test_layering.py holds the graph acyclic).
PACKAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "syntax": (
        "libcst's tree, cheaply: one read-only index of nodes by class, a transform that rebuilds only\n"
        "what changed, callbacks looked up once per class, the parser without re-validation, positions\n"
        "of reported nodes only and the printing of changed statements only. No rule knowledge.",
        ("node_index", "traverse", "dispatch", "parsing", "node_positions", "splice"),
    ),
    "project": (
        "The project-wide pre-read: every module of the input tree read once with CPython's `ast`\n"
        "(signatures, uses of other modules' values, re-exports), joined across modules, and the\n"
        "`ProjectLayout` each file sees (which imports are the project's own). No libcst.",
        ("project_walk", "project_results", "project_devices", "project_index", "first_party"),
    ),
    "naming": (
        "Names and bindings: the light import-alias table, what a module binds other than by import,\n"
        "how each name is used, and who owns a short name in a file.",
        ("names", "bindings", "name_uses", "ownership"),
    ),
    "devices": (
        "Device evidence and per-device dispatch: which names hold a device, one file's calls into the\n"
        "project's other modules, whether a literal is a device, and which alternatives of a dispatch\n"
        "(or a CUDA-only guard) stay as written.",
        (
            "device_flow",
            "project_calls",
            "project_compares",
            "device_evidence",
            "twins",
            "cuda_only",
            "dispatch_sites",
        ),
    ),
    "interface": (
        "What the rule kinds see of the engine: a rule entry (`Rule`), the hooks' protocols and the\n"
        "`Site` they are handed, the one registry of hooks, and the `Tables` every kind compiles into.",
        ("rule", "hook_registry", "hooks", "hook_runs", "tables"),
    ),
    "reporting": (
        "Reports of sites: findings waiting for their positions, their messages, the support verdicts\n"
        "of a release, and inline suppressions and fingerprints.",
        ("messages", "pending", "support", "site_reports", "suppress"),
    ),
    "literals": (
        "String literals: each one's role with its evidence (environment variable, prose, device,\n"
        "key, ...), found before the rewrite, and the rewrite by role.",
        ("environment", "roles", "string_rewrites"),
    ),
    "importing": (
        "Imports: what each imported name is bound to after the rewrites, the planning and insertion\n"
        "of `import torch_npu`, and import statements rewritten and split keeping their layout.",
        ("import_split", "imports", "import_statements"),
    ),
    "conversion": (
        "One file's conversion: `convert_source` (bytes in, a `FileResult` out, never raising), the\n"
        "ast fast path, notebooks and sources libcst misreads, and the one transformer with the bases\n"
        "and helpers it asks (dispatch, fused patterns, generic hooks, results, guards, shell text).",
        (
            "transformer",
            "convert",
            "fast_path",
            "notebook",
            "normalise",
            "embedded_scripts",
            "dispatch_rewrites",
            "fused_patterns",
            "node_hooks",
            "call_results",
            "guards",
        ),
    ),
}

#: flat module -> its name in its package, where they differ: a face cannot offer a name its
#: package has a module of (importing `syntax.positions` would rebind `syntax.positions`)
RENAMED = {"positions": "node_positions"}
#: module -> its package
HOME = {module: package for package, (_, modules) in PACKAGES.items() for module in modules}
#: the flat layout's module -> (package, module)
FLAT = {
    next((old for old, new in RENAMED.items() if new == module), module): (package, module)
    for module, package in HOME.items()
}
#: (package, a module's former name inside it) -> its name now
RENAMED_INSIDE = {(HOME[new], old): new for old, new in RENAMED.items()}
#: files whose text is never rewritten (records, inputs, generated output)
FROZEN = (
    "tools/engine_layout.py",  # and its test: they spell the flat layout on purpose
    "tests/test_engine_packages.py",
    "tests/fixtures/",
    "sample_models/",
    "bench/data/",
    "docs/benchmarks.md",
    "docs/rules.md",
)
TEXT_SUFFIXES = (".py", ".md", ".sh", ".toml")


@dataclass
class Layout:
    """The engine as it stands: each package's modules, their top-level names, each face's exports."""

    root: Path
    modules: dict[str, set[str]] = field(default_factory=dict)  # package -> its modules
    defined: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (package, module) -> names
    made: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # the same, defined not imported
    exports: dict[str, dict[str, str]] = field(default_factory=dict)  # package -> name -> module
    needed: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    notes: list[str] = field(default_factory=list)

    def home_of(self, package: str, name: str) -> str | None:
        """The module of `package` that defines `name` (a face's record first, then a unique definer)."""
        if name in self.needed[package]:
            return self.needed[package][name]
        if name in self.exports.get(package, {}):
            return self.exports[package][name]
        modules = sorted(self.modules.get(package, ()))
        owners = [m for m in modules if name in self.made[(package, m)]]
        owners = owners or [m for m in modules if name in self.defined[(package, m)]]
        return owners[0] if len(owners) == 1 else None

    def exported(self, package: str, name: str) -> bool:
        return name in self.exports.get(package, {}) or name in self.needed[package]


def engine_dir(root: Path) -> Path:
    return root / "ms_fmk_transplt" / "engine"


def top_level_names(path: Path) -> tuple[set[str], set[str]]:
    """Names a module defines at its top level, and those it binds by importing them."""
    made: set[str] = set()
    imported: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            made.add(node.name)
        elif isinstance(node, ast.Assign):
            made |= {t.id for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            made.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom | ast.If | ast.Try):  # TYPE_CHECKING, try/except
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    imported |= {(a.asname or a.name).split(".")[0] for a in inner.names}
    return made, imported


def face_homes(path: Path) -> dict[str, str]:
    """A face's `_HOMES` (name -> module), or {} when it has none yet."""
    if not path.exists():
        return {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["_HOMES"]:
            return dict(ast.literal_eval(node.value))
    return {}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def move_modules(root: Path, check: bool) -> list[str]:
    """`git mv` each known module still at the engine's top into its package; print unknown ones."""
    moved = []
    engine = engine_dir(root)
    for path in sorted(engine.glob("*.py")):
        module = path.stem
        if module == "__init__":
            continue
        if module not in FLAT:
            print(f"UNPLACED: {path.relative_to(root)} is in no package of PACKAGES; add it and run again")
            continue
        package, new = FLAT[module]
        target = engine / package / f"{new}.py"
        if target.exists():
            print(
                f"CONFLICT: both {path.relative_to(root)} and {target.relative_to(root)} exist; merge by hand"
            )
            continue
        moved.append(f"{path.relative_to(root)} -> {target.relative_to(root)}")
        if not check:
            target.parent.mkdir(exist_ok=True)
            git(root, "mv", str(path.relative_to(root)), str(target.relative_to(root)))
    for (package, old), new in RENAMED_INSIDE.items():
        path, target = engine / package / f"{old}.py", engine / package / f"{new}.py"
        if path.exists() and not target.exists():
            moved.append(f"{path.relative_to(root)} -> {target.relative_to(root)}")
            if not check:
                git(root, "mv", str(path.relative_to(root)), str(target.relative_to(root)))
    for old, (package, new) in FLAT.items():
        if not (engine / f"{old}.py").exists() and not (engine / package / f"{new}.py").exists():
            print(f"GONE: PACKAGES places {new} in {package}, but there is no such module; take it out")
    for package in PACKAGES:
        if not check and not (engine / package / "__init__.py").exists():
            (engine / package).mkdir(exist_ok=True)
            (engine / package / "__init__.py").write_text(f'"""{PACKAGES[package][0]}"""\n', encoding="utf-8")
    return moved


def read_layout(root: Path) -> Layout:
    layout = Layout(root)
    engine = engine_dir(root)
    for package in PACKAGES:
        folder = engine / package
        modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} if folder.is_dir() else set()
        # before the moves (under --check), a package's modules are still at the top
        flat = {new: old for old, (p, new) in FLAT.items() if p == package}
        modules |= {m for m in PACKAGES[package][1] if (engine / f"{flat[m]}.py").exists()}
        layout.modules[package] = modules
        for module in modules:
            path = folder / f"{module}.py"
            made, imported = top_level_names(path if path.exists() else engine / f"{flat[module]}.py")
            layout.made[(package, module)] = made
            layout.defined[(package, module)] = made | imported
        homes = face_homes(folder / "__init__.py")
        kept = {}
        for name, module in homes.items():
            if module in modules and name in layout.defined[(package, module)]:
                kept[name] = module
            else:
                layout.notes.append(f"face {package}: {name} is no longer in {package}.{module}; dropped")
        layout.exports[package] = kept
    return layout


# ---------------------------------------------------------------- imports


@dataclass(frozen=True)
class Importer:
    """Who imports: its dotted package (for relative imports), its engine subpackage, whether it is package code."""

    package: str
    subpackage: str | None
    in_package: bool


def importer_of(rel: str) -> Importer:
    parts = Path(rel).with_suffix("").parts
    dotted = ".".join(parts[:-1])  # a module's package; an __init__'s, its own
    sub = parts[2] if len(parts) > 3 and parts[:2] == ("ms_fmk_transplt", "engine") else None
    return Importer(dotted, sub, parts[0] == "ms_fmk_transplt")


def absolute(node: ast.ImportFrom, importer: Importer) -> str:
    base = node.module or ""
    if node.level:
        parent = importer.package.rsplit(".", node.level - 1)[0] if node.level > 1 else importer.package
        base = f"{parent}.{base}" if base else parent
    return base


def spell_from(
    node: ast.ImportFrom, importer: Importer, layout: Layout, where: str
) -> list[tuple[str, str]] | None:
    """(module spelled, `name [as alias]`) for each name of an engine `from` import; None: leave it."""
    base = absolute(node, importer)
    if base != ENGINE and not base.startswith(ENGINE + "."):
        return None
    rest = base.split(".")[2:]
    out: list[tuple[str, str]] = []
    for alias in node.names:
        text = alias.name + (f" as {alias.asname}" if alias.asname else "")
        if not rest:  # from ms_fmk_transplt.engine import X
            if alias.name in FLAT:
                package, module = FLAT[alias.name]
                if module != alias.name:
                    text = f"{module} as {alias.asname or alias.name}"
                out.append((f"{ENGINE}.{package}", text))
            else:
                if alias.name not in PACKAGES and alias.name not in ("load_attribute",):
                    print(f"UNKNOWN: {where} imports {ENGINE}.{alias.name}")
                out.append((base, text))
            continue
        if len(rest) == 1 and rest[0] in FLAT:  # the flat layout's module
            package, module = FLAT[rest[0]]
        elif len(rest) == 1 and rest[0] in PACKAGES:  # a face
            package = rest[0]
            if alias.name in layout.modules[package]:  # a module through its package
                out.append((base, text))
                continue
            found = layout.home_of(package, alias.name)
            if found is None:
                print(
                    f"UNRESOLVED: {where} imports {alias.name} from the face {base}, which no module of it defines once"
                )
                out.append((base, text))
                continue
            module = found
        elif len(rest) == 2 and rest[0] in PACKAGES:  # a module's full path
            package, module = rest[0], RENAMED_INSIDE.get((rest[0], rest[1]), rest[1])
        else:
            print(f"UNKNOWN: {where} imports from {base}, a module in no package of PACKAGES")
            return None
        deep = f"{ENGINE}.{package}.{module}"
        if importer.subpackage == package:
            out.append((deep, text))
        elif importer.in_package:
            if alias.name not in layout.defined.get((package, module), set()):
                print(f"UNRESOLVED: {where} imports {alias.name} from {deep}, which does not bind it")
                out.append((deep, text))
                continue
            layout.needed[package][alias.name] = module
            out.append((f"{ENGINE}.{package}", text))
        else:
            out.append((f"{ENGINE}.{package}" if layout.exported(package, alias.name) else deep, text))
    return out


def spell_import(node: ast.Import) -> list[str] | None:
    """`import ms_fmk_transplt.engine.X [as y]` keeps the module: its full new path."""
    out, changed = [], False
    for alias in node.names:
        parts = alias.name.split(".")
        name = alias.name
        if parts[:2] == ["ms_fmk_transplt", "engine"] and len(parts) > 2 and parts[2] in FLAT:
            name = ".".join([*parts[:2], *FLAT[parts[2]], *parts[3:]])
            changed = True
        elif parts[:2] == ["ms_fmk_transplt", "engine"] and tuple(parts[2:4]) in RENAMED_INSIDE:
            name = ".".join([*parts[:3], RENAMED_INSIDE[(parts[2], parts[3])], *parts[4:]])
            changed = True
        out.append(name + (f" as {alias.asname}" if alias.asname else ""))
    return out if changed else None


def rewrite_imports(text: str, rel: str, layout: Layout) -> str:
    tree = ast.parse(text)
    importer = importer_of(rel)
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        new: str | None = None
        if isinstance(node, ast.ImportFrom):
            spelled = spell_from(node, importer, layout, f"{rel}:{node.lineno}")
            if spelled is None:
                continue
            groups: dict[str, list[str]] = {}
            for module, name in spelled:
                groups.setdefault(module, []).append(name)
            if list(groups) == [node.module] and not node.level:
                continue  # spelled as it should be already (its layout is ruff's)
            indent = " " * node.col_offset
            new = f"\n{indent}".join(f"from {m} import {', '.join(names)}" for m, names in groups.items())
        elif isinstance(node, ast.Import):
            names = spell_import(node)
            if names is None:
                continue
            new = f"import {', '.join(names)}"
        else:
            continue
        assert node.end_lineno is not None and node.end_col_offset is not None
        start = offsets[node.lineno - 1] + len(lines[node.lineno - 1].encode()[: node.col_offset].decode())
        end = offsets[node.end_lineno - 1] + len(
            lines[node.end_lineno - 1].encode()[: node.end_col_offset].decode()
        )
        if "#" in text[start:end]:
            print(f"SKIPPED: {rel}:{node.lineno} has a comment inside its import; spell it by hand: {new}")
            continue
        edits.append((start, end, new))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


# ---------------------------------------------------------------- text

_NAMES = "|".join(sorted(FLAT, key=len, reverse=True))
_DOTTED = re.compile(r"\bms_fmk_transplt\.engine\.(" + _NAMES + r")\b")
_PATH = re.compile(r"(?<![\w./-])((?:ms_fmk_transplt/)?engine/)(" + _NAMES + r")\.py\b")
_INSIDE = "|".join(rf"{package}[./]{old}" for package, old in RENAMED_INSIDE)
_DOTTED_INSIDE = re.compile(r"\bms_fmk_transplt\.engine\.(" + _INSIDE + r")\b")
_PATH_INSIDE = re.compile(r"(?<![\w./-])((?:ms_fmk_transplt/)?engine/)(" + _INSIDE + r")\.py\b")


def _renamed(spelled: str, separator: str) -> str:
    package, old = re.split(r"[./]", spelled)
    return f"{package}{separator}{RENAMED_INSIDE[(package, old)]}"


def rewrite_text(text: str, paths: bool) -> str:
    text = _DOTTED.sub(lambda m: f"{ENGINE}.{'.'.join(FLAT[m.group(1)])}", text)
    if RENAMED_INSIDE:
        text = _DOTTED_INSIDE.sub(lambda m: f"{ENGINE}.{_renamed(m.group(1), '.')}", text)
    if paths:
        text = _PATH.sub(lambda m: f"{m.group(1)}{'/'.join(FLAT[m.group(2)])}.py", text)
        if RENAMED_INSIDE:
            text = _PATH_INSIDE.sub(lambda m: f"{m.group(1)}{_renamed(m.group(2), '/')}.py", text)
    return text


# ---------------------------------------------------------------- faces

_FACE_BODY = """
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ms_fmk_transplt.engine import load_attribute

if TYPE_CHECKING:
{imports}

__all__ = [{names}]

# each name of __all__ -> the module of this package that defines it, imported on first use
_HOMES = {{{homes}}}


def __getattr__(name: str) -> Any:
    return load_attribute(__name__, _HOMES, name)
"""


def listed_packages(pyproject: str) -> str:
    """pyproject.toml with every subpackage on its hand-kept list (else the wheel leaves it out)."""
    lines = pyproject.splitlines(keepends=True)
    anchor = f'    "{ENGINE}",\n'
    if anchor not in lines:
        print(f"NOTE: pyproject.toml does not list {ENGINE} as expected; list the subpackages by hand")
        return pyproject
    at = lines.index(anchor) + 1
    for package in sorted(PACKAGES, reverse=True):
        entry = f'    "{ENGINE}.{package}",\n'
        if entry not in lines:
            lines.insert(at, entry)
    return "".join(lines)


def _ruff() -> str | None:
    return shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


def styled(text: str, root: Path, skip: bool) -> str:
    """A generated face as ruff sorts and formats it, so that an unchanged face compares equal."""
    ruff = _ruff()
    if ruff is None or skip:
        return text
    name = "ms_fmk_transplt/engine/face.py"  # where the settings are the package's
    fixed = (
        subprocess.run(
            [ruff, "check", "--fix-only", "--select", "I,RUF022", "-q", "--stdin-filename", name, "-"],
            input=text,
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        or text
    )
    return (
        subprocess.run(
            [ruff, "format", "-q", "--stdin-filename", name, "-"],
            input=fixed,
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        or fixed
    )


def face_text(package: str, current: str | None, homes: dict[str, str]) -> str:
    docstring = PACKAGES[package][0]
    if current:
        first = ast.parse(current).body
        if first and isinstance(first[0], ast.Expr) and isinstance(first[0].value, ast.Constant):
            docstring = str(first[0].value.value)
    by_module: dict[str, list[str]] = defaultdict(list)
    for name, module in sorted(homes.items()):
        by_module[module].append(name)
    imports = "\n".join(
        f"    from {ENGINE}.{package}.{module} import {', '.join(names)}"
        for module, names in sorted(by_module.items())
    )
    if not imports:
        imports = "    pass"
    return f'"""{docstring}"""\n' + _FACE_BODY.format(
        imports=imports,
        names=", ".join(f'"{n}"' for n in sorted(homes)),
        homes=", ".join(f'"{n}": "{m}"' for n, m in sorted(homes.items())),
    )


# ---------------------------------------------------------------- the run


def tracked(root: Path) -> list[str]:
    files = git(root, "ls-files").split()
    return [f for f in files if f.endswith(TEXT_SUFFIXES) or f == ".ci/run"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if something would change"
    )
    parser.add_argument(
        "--engine-prose", action="store_true", help="also the file paths in the engine's own prose"
    )
    parser.add_argument(
        "--no-ruff", action="store_true", help="leave the changed files unsorted and unformatted"
    )
    options = parser.parse_args(argv)
    root = Path(git(Path(__file__).resolve().parent, "rev-parse", "--show-toplevel").strip())

    moved = move_modules(root, options.check)
    layout = read_layout(root)
    changed: dict[str, str] = {}
    files = [f for f in tracked(root) if not f.startswith(FROZEN)]
    # the package first: what it imports from a face decides the face, which tests may then use
    files.sort(key=lambda f: (not f.startswith("ms_fmk_transplt/"), f))
    for rel in files:
        path = root / rel
        if not path.is_file():  # moved under --check, or deleted
            continue
        text = original = path.read_text(encoding="utf-8")
        if rel.endswith(".py"):
            text = rewrite_imports(text, rel, layout)
        in_engine = rel.startswith("ms_fmk_transplt/engine/")
        text = rewrite_text(text, paths=options.engine_prose or not in_engine)
        if text != original:
            changed[rel] = text

    engine = engine_dir(root)
    for package in PACKAGES:
        face = engine / package / "__init__.py"
        current = face.read_text(encoding="utf-8") if face.exists() else None
        homes = {**layout.exports[package], **layout.needed[package]}
        for name in sorted(set(homes) & layout.modules[package]):
            print(
                f"CLASH: {package} has a module named {name}: its face cannot offer the name; add to RENAMED"
            )
        text = styled(face_text(package, current, homes), root, options.no_ruff)
        if text != current:
            changed[str(face.relative_to(root))] = text
    listed = listed_packages(
        changed.get("pyproject.toml") or (root / "pyproject.toml").read_text(encoding="utf-8")
    )
    if listed != (changed.get("pyproject.toml") or (root / "pyproject.toml").read_text(encoding="utf-8")):
        changed["pyproject.toml"] = listed

    for note in layout.notes:
        print(note)
    for line in moved:
        print(f"MOVE: {line}")
    for rel in sorted(changed):
        print(f"REWRITE: {rel}")
    if options.check:
        return 1 if moved or changed else 0

    for rel, text in changed.items():
        (root / rel).write_text(text, encoding="utf-8")
    prose = [rel for rel in changed if rel.startswith("ms_fmk_transplt/") and rel.endswith(".py")]
    python = [rel for rel in changed if rel.endswith(".py")]
    ruff = _ruff()
    if python and ruff and not options.no_ruff:
        subprocess.run([ruff, "check", "--fix", "--select", "I,RUF022", "-q", *python], cwd=root, check=False)
        subprocess.run([ruff, "format", "-q", *python], cwd=root, check=False)
    if prose:  # the rules reference is made of the kinds' and the policies' docstrings
        subprocess.run(
            [sys.executable, "-m", "ms_fmk_transplt", "rules", "doc", "-o", "docs/rules.md"],
            cwd=root,
            check=False,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
    print(f"{len(moved)} modules moved, {len(changed)} files rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
