"""The project's own modules: an import that reaches one is never a third-party library's.

A project whose package is named like a CUDA-only library (`mamba_ssm/`), or that keeps a folder
named like one (`triton/` of Triton Inference Server scripts), must not have its own imports
reported as that library. The run builds a `ProjectLayout` once from the discovered tree; each
file sees it from where it is (`seen_from`), and `Tables.lookup` asks `FirstParty.owns` before
any rule keyed by a module's name.

The rule is `POLICY` below, printed in docs/rules.md.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from ms_fmk_transplt.engine.project.project_devices import ModuleFacts, ModuleSignatures, scan_source
from ms_fmk_transplt.engine.project.project_index import ProjectIndex
from ms_fmk_transplt.engine.project.project_results import CALLED, COMPARED, OTHER
from ms_fmk_transplt.engine.project.project_walk import OWN, join, module_paths, relative_files


class SignatureMemo(Protocol):
    """Where a module's signatures are kept for its bytes (cache.ResultCache)."""

    def get_signatures(self, rel: str, data: bytes) -> ModuleFacts | None: ...

    def put_signatures(self, rel: str, data: bytes, facts: ModuleFacts) -> None: ...


@dataclass(frozen=True)
class ProjectLayout:
    """The Python files of the input tree (POSIX paths relative to the input root) and the folders
    holding any of them; built once per run by discovery."""

    files: frozenset[str]
    folders: frozenset[str] = frozenset()
    # what each module's functions and classes hand their parameters to (engine/project/project_devices.py)
    signatures: Mapping[str, ModuleSignatures] = field(default_factory=dict, compare=False, hash=False)
    imports: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False, hash=False)
    # everything each module tells the others (re-exports, uses of their values too)
    facts: Mapping[str, ModuleFacts] = field(default_factory=dict, compare=False, hash=False, repr=False)
    # path -> the part of its result-cache key the signatures it reads make (`key_part`)
    _parts: dict[str, bytes] = field(default_factory=dict, compare=False, hash=False, repr=False)
    _direct: dict[str, set[str]] = field(default_factory=dict, compare=False, hash=False, repr=False)
    _index: list[ProjectIndex] = field(default_factory=list, compare=False, hash=False, repr=False)

    @classmethod
    def of(cls, paths: Iterable[str]) -> ProjectLayout:
        """The layout of these .py paths (other paths are ignored: notebooks are not importable)."""
        files = frozenset(posixpath.normpath(p) for p in paths if p.endswith(".py"))
        folders: set[str] = set()
        for path in files:
            folder = posixpath.dirname(path)
            while folder and folder not in folders:
                folders.add(folder)
                folder = posixpath.dirname(folder)
        return cls(files, frozenset(folders))

    def reading(
        self, sources: Iterable[tuple[str, bytes]], memo: SignatureMemo | None = None
    ) -> ProjectLayout:
        """This layout knowing what the modules' own functions hand their parameters to (`memo`:
        the result cache, which keeps each module's answer for its bytes)."""
        signatures: dict[str, ModuleSignatures] = {}
        imports: dict[str, tuple[str, ...]] = {}
        everything: dict[str, ModuleFacts] = {}
        for rel, source in sources:
            path = posixpath.normpath(rel)
            if path not in self.files:
                continue
            facts = memo.get_signatures(path, source) if memo is not None else None
            if facts is None:
                facts = scan_source(source, path)
                if memo is not None:
                    memo.put_signatures(path, source, facts)
            if facts.signatures:
                signatures[path] = facts.signatures
            imports[path] = facts.imports
            everything[path] = facts
        return replace(
            self, signatures=signatures, imports=imports, facts=everything, _parts={}, _direct={}, _index=[]
        )

    @property
    def index(self) -> ProjectIndex:
        """The modules' facts joined across modules (built on first use, once per process)."""
        if not self._index:
            self._index.append(ProjectIndex(self.files, self.facts, self.seen_from))
        return self._index[0]

    def digest(self) -> bytes:
        """What a file's result depends on besides its bytes and the rules (a result-cache key part);
        the signatures it reads are `key_part`'s."""
        return hashlib.sha256("\0".join(sorted(self.files)).encode()).digest()

    def key_part(self, path: str) -> bytes:
        """What the file at `path` reads of the project's other modules: the facts of the modules
        it imports, directly or through them (`_forward`), and what its importers do with its
        values, with what they read (editing one of these converts it again, and no other file)."""
        if not self.facts:
            return b""
        path = posixpath.normpath(path)
        part = self._parts.get(path)
        if part is None:
            digest = hashlib.sha256(self._forward(path))
            facts = self.facts.get(path)
            valued = facts.valued if facts is not None else frozenset()
            # what importers do with a value that holds no literal (`return pick()`) decides nothing here
            returned = {k: uses for k, uses in self.index.returned(path).items() if k in valued}
            # the results of the project's functions it compares (`if kernel_kind() == "cuda"`)
            # are what the project's modules make of them (engine/devices/project_compares.py)
            for spelled, uses in facts.results if facts is not None else ():
                if spelled.endswith(CALLED) and any(u in (COMPARED, OTHER) for u in uses):
                    found = self.index.locate(spelled[: -len(CALLED)], path)
                    if found is not None and "." not in found[1]:
                        key = found[1] + CALLED
                        returned[f"{found[0]}{OWN}{key}"] = self.index.returned(found[0]).get(key, ())
            if returned:
                digest.update(repr(sorted(returned.items())).encode())
                for importer in sorted({i for entries in returned.values() for i, _ in entries}):
                    digest.update(importer.encode() + b"\0" + self._forward(importer))
            part = self._parts[path] = digest.digest()
        return part

    def _forward(self, path: str) -> bytes:
        """A digest of the facts of the modules the file at `path` imports, directly or through them."""
        key = "\0>" + path  # beside the files' parts, never a path
        part = self._parts.get(key)
        if part is None:
            if not self._direct:  # the direct imports are resolved once, for every file
                self._direct.update((m, self._imported(m)) for m in self.imports)
                self._parts.update(
                    ("\0<" + m, d) for m, d in _closures(self._direct, self._digest_of).items()
                )
            reached = sorted({self._parts.get("\0<" + m, b"") for m in self._direct.get(path, ())})
            part = self._parts[key] = hashlib.sha256(b"".join(reached)).digest()
        return part

    def _digest_of(self, module: str) -> bytes:
        """A digest of what one module tells its importers (none for a module not read)."""
        facts = self.facts.get(module)
        return b"" if facts is None else hashlib.sha256(repr(facts.seen()).encode()).digest()

    def _imported(self, module: str) -> set[str]:
        view = self.seen_from(module)
        found: set[str] = set()
        for name in self.imports.get(module, ()):
            if name.startswith("."):  # from .helpers import move
                found.update(relative_files(self.files, module, name))
            else:
                found.update(view.module_files(name))
        return found

    def seen_from(self, path: str) -> FirstParty:
        """The project's modules as the file at `path` imports them."""
        folder = posixpath.dirname(posixpath.normpath(path))
        roots: list[str] = []
        while True:
            # a regular package's folder is never on sys.path: its modules are imported by the
            # package's name, so its `utils/torch.py` does not shadow torch for its neighbours;
            # the input root is, even with a stray __init__.py (scripts run from there)
            if not folder or join(folder, "__init__.py") not in self.files:
                roots.append(folder)
            src = join(folder, "src")
            if src in self.folders and join(src, "__init__.py") not in self.files:
                roots.append(src)
            parent = posixpath.dirname(folder)
            if not folder or parent == folder or folder in (".", "..") or folder.endswith("/.."):
                break  # the input root, or the top of an absolute path (analyse of several inputs)
            folder = parent
        return FirstParty(self, tuple(roots), posixpath.normpath(path))


def _closures(edges: Mapping[str, set[str]], own: Callable[[str], bytes]) -> dict[str, bytes]:
    """Per module, a digest of `own` of every module it reaches through `edges`, itself included:
    one pass over the strongly connected components (Tarjan's, iterative), each digesting its
    members and the components it imports (a package's `__init__.py` ties most modules into one)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    digests: dict[str, bytes] = {}
    for root in sorted(edges):
        if root in order:
            continue
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges.get(root, ()))))]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in order:
                    order[child] = low[child] = len(order)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], order[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:  # a component, every one it imports already digested
                    members: list[str] = []
                    while not members or members[-1] != node:
                        members.append(stack.pop())
                        on_stack.discard(members[-1])
                    inside = set(members)
                    digest = hashlib.sha256()
                    for member in sorted(members):
                        digest.update(member.encode() + b"\0" + own(member))
                    below = {digests[c] for m in members for c in edges.get(m, ()) if c not in inside}
                    digest.update(b"".join(sorted(below)))
                    for member in members:
                        digests[member] = digest.digest()
    return digests


class FirstParty:
    """One file's view of the project's modules: `owns(name)` for a qualified name."""

    def __init__(self, layout: ProjectLayout, roots: tuple[str, ...], path: str = "") -> None:
        self.layout = layout
        self.roots = roots
        self.path = path  # the file's own path (relative imports start from its folder)
        self._owned: dict[str, bool] = {}

    def owns(self, name: str) -> bool:
        """Does dotted `name` resolve to the project's own module, package or folder (or a member
        of its module) from this file's roots, as Python would import it?"""
        owned = self._owned.get(name)
        if owned is None:
            owned = self._owned[name] = self._resolve(name.split("."))
        return owned

    def module_files(self, name: str) -> list[str]:
        """The project's module files dotted `name` names: the module itself, or the one holding
        it as a member (`pkg.helpers`, `pkg.helpers.move`: pkg/helpers.py)."""
        found = [path for path, _ in filter(None, [self.module_of(name)])]
        for root in self.roots:
            base = join(root, name.replace(".", "/"))
            found += [p for p in module_paths(base) if p in self.layout.files]
        return found

    def module_of(self, name: str) -> tuple[str, str] | None:
        """(the project's module file, the member) a dotted `name` of a module's member reaches."""
        parts = name.split(".")
        if len(parts) < 2:
            return None
        for root in self.roots:
            base = join(root, "/".join(parts[:-1]))
            for path in module_paths(base):
                if path in self.layout.files:
                    return path, parts[-1]
        return None

    def _resolve(self, parts: list[str]) -> bool:
        files, folders = self.layout.files, self.layout.folders
        portions: list[str] = []
        for root in self.roots:
            base = join(root, parts[0])
            if any(p in files for p in module_paths(base)):
                return True  # a module or regular package: everything below it is the project's
            if base in folders:
                portions.append(base)
        for part in parts[1:]:
            if not portions:
                break
            reached: list[str] = []
            for portion in portions:
                path = join(portion, part)
                if any(p in files for p in module_paths(path)):
                    return True
                if path in folders:
                    reached.append(path)
            portions = reached  # none: not in the project's namespace package, an installed library's
        # a bare name reaching only folders (`import triton`, tests/ops/triton/ up the tree) is
        # the installed library's: Python prefers a regular package to namespace portions
        return bool(portions) and len(parts) > 1


POLICY = """\
Before any rule keyed by a module's name applies (the CUDA-only libraries of TP5xx, renames of
a module's members), an import is resolved against the input tree, as Python would import it
from the importing file: one that reaches the project's own file is never a library's. A
project whose package is named like a CUDA-only library (`mamba_ssm/`) or that keeps a folder
named like one (`triton/` of Triton Inference Server scripts) is not reported for its own imports.

- **Roots**: the importing file's own folder (a script's `sys.path[0]`) and every folder above it
  up to the input root (where a project is run, installed or tested from; it holds the folder
  above each package), each with its `src/` folder (the src layout); a regular package's folder
  is none (its modules are imported by the package's name: `mamba_ssm/utils/torch.py` does not
  shadow torch for `mamba_ssm/utils/generation.py`).
- **A module `a.py` or a regular package `a/__init__.py`** at a root is what Python imports for
  `a`, before any installed library: every name under `a` is the project's.
- **A folder `a/` without `__init__.py`** is a namespace package, which Python uses only when no
  installed package `a` exists (a CUDA-only library never is, on an Ascend host): a name under it
  is the project's while each of its segments reaches a module, package or folder of the project
  (`triton.deployment_toolkit.core`), a library's as soon as one does not (`triton.language`
  and `triton.jit` where the project's `triton/` holds no such module), in the same run; the
  bare name (`import triton`) is the library's, which Python prefers to namespace folders.
- **Relative imports** are always the project's. A compiled extension the project builds
  (`import selective_scan_cuda`, no `.py` in the tree) is still reported.
- **`-i` a subfolder** of a project: the project's other packages are not in the tree, so
  imports of them are judged as before.
"""
