"""The simulated npu's native part (csrc/): built with PyTorch's C++ extension tooling at first use.

It holds the PrivateUse1 hooks (below) and the native dispatch path (csrc/npu_dispatch.cpp: C++
kernels for the npu's ATen ops and the device-memory counters; see backend/dispatch.py).

PyTorch's Python backend API (``torch._C._acc.PrivateUse1Hooks``) exposes only
``is_available``, ``is_built`` and ``has_primary_context``; pinned host memory
(``torch.empty(..., pin_memory=True)``, DDP's ``find_unused_parameters=True``) and
``torch.Generator(device="npu")`` need a C++ ``PrivateUse1HooksInterface``, and PyTorch
accepts one hooks object per process. So the hooks are C++ (csrc/npu_hooks.cpp), compiled
once per torch version into a cache folder and loaded from there afterwards.

Without a C++ compiler, or when the build fails, the device is registered with Python hooks
(the Python path): everything works except those two features, which fail with PyTorch's
own error, and every op runs through the Python kernels (several microseconds per op); one
warning says why. ``RUNTIME_SHIM_NATIVE=0`` asks for the Python path (without a warning).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import IO

import torch

from runtime_shim.backend import native_cache

ENV = "RUNTIME_SHIM_NATIVE"
CACHE_ENV = "RUNTIME_SHIM_CACHE"
_CSRC = Path(__file__).resolve().parent.parent / "csrc"
_SOURCES = [
    _CSRC / name
    for name in (
        "npu_hooks.cpp",
        "npu_dispatch.cpp",
        "npu_typed.cpp",
        "npu_rnn.cpp",
        "npu_attention.cpp",
        "npu_routes.cpp",
    )
]
_HEADERS = [_CSRC / "npu_native.h"]
_MODULE_NAME = "runtime_shim_native"  # the tooling builds native_cache.MODULE_FILE of it

#: Why the Python path is in use ("" while the native part is loaded or not yet tried).
python_path_reason = ""


def compiler() -> str | None:
    """The C++ compiler the extension tooling would use, or None when there is none."""
    return shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++") or shutil.which("clang++")


def build_directory() -> Path:
    """Where the compiled module is cached: one folder per torch version (and source digest)."""
    import hashlib

    # The sources' folder is part of the key: the build files name the sources by path, so two
    # checkouts sharing one interpreter (and one cache) would otherwise rebuild over each other.
    sources = b"".join(p.read_bytes() for p in _SOURCES + _HEADERS)
    digest = hashlib.sha256(sources + b"-O2" + str(_CSRC).encode()).hexdigest()[:12]
    root = os.environ.get(CACHE_ENV)
    if not root:
        # Beside the interpreter's packages (a venv's own folder) when writable: the build then
        # belongs to that torch install, and tools/setup.sh builds it once there.
        root = os.path.join(sys.prefix, "var", "cache", "runtime_shim")
        if not os.access(sys.prefix, os.W_OK):
            root = os.path.join(os.path.expanduser("~/.cache"), "runtime_shim")
    return Path(root) / f"native-torch{torch.__version__}-{digest}"


def load() -> ModuleType | None:
    """Build (first use) or load the native module; None, with one warning, on the Python path."""
    global python_path_reason
    if os.environ.get(ENV, "1").strip() == "0":
        python_path_reason = f"{ENV}=0"
        return None
    if compiler() is None:
        python_path_reason = "no C++ compiler found (install g++, or set CXX)"
    else:
        try:
            folder = build_directory()
            with _one_build_at_a_time(folder):
                built = not (folder / native_cache.MODULE_FILE).exists()
                if not built and native_cache.finished(folder, _CSRC):
                    try:
                        return _import_built(folder)
                    except (ImportError, OSError):  # a damaged file: the tooling links it anew
                        (folder / native_cache.SOURCE_MARK).unlink(missing_ok=True)
                        (folder / native_cache.MODULE_FILE).unlink(missing_ok=True)
                        built = True
                from torch.utils import cpp_extension

                module = cpp_extension.load(
                    _MODULE_NAME,
                    [str(p) for p in _SOURCES],
                    build_directory=str(folder),
                    # The tooling adds no optimisation flag; the kernels are on every op's path.
                    extra_cflags=["-O2"],
                    verbose=False,
                )
                native_cache.mark_source(folder, _CSRC)  # built and loaded: the fast path's sign
            if built:  # the builds of this checkout's earlier sources are stale now
                native_cache.prune(folder, _CSRC)
            return module
        except Exception as exc:  # a failed build must leave a working (Python-path) device
            python_path_reason = f"building csrc/ failed: {str(exc).strip().splitlines()[-1]}"
    warnings.warn(
        f"runtime_shim: native part not loaded ({python_path_reason}); pinned memory and "
        'torch.Generator(device="npu") are unavailable on the simulated npu, and its ops run '
        "through the Python kernels (slower)",
        RuntimeWarning,
        stacklevel=3,
    )
    return None


def _import_built(folder: Path) -> ModuleType:
    """Import the module a finished build left in ``folder``.

    The folder's name holds the torch version and the digest of the sources and flags, and its
    source mark is written only after the tooling built and loaded the module, so the module is
    this checkout's build: importing it directly skips the tooling's start (importing setuptools,
    writing build.ninja and running ninja to find nothing to do), 0.25 s of every process's
    start (docs/benchmarks.md).
    """
    import importlib.util

    spec = importlib.util.spec_from_file_location(_MODULE_NAME, folder / native_cache.MODULE_FILE)
    if spec is None or spec.loader is None:
        raise ImportError(f"{folder / native_cache.MODULE_FILE}: not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The lock file PyTorch's extension tooling makes in the build folder while it builds.
TOOLING_LOCK = "lock"
LOCK_ATTEMPTS = 3


@contextlib.contextmanager
def _one_build_at_a_time(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` while the tooling builds or loads in it.

    The tooling marks a build with a plain file that every later process waits on until it is
    gone; a build that was killed (Ctrl-C during the first use's minutes of compiling) leaves it
    behind, and every later start then waited forever. This lock is the kernel's (released when
    its process dies, however it dies), so whoever holds it knows a tooling lock file it finds is
    stale and removes it. A folder pruned (native_cache.py) while this waited is made anew.
    """
    for _ in range(LOCK_ATTEMPTS):
        folder.mkdir(parents=True, exist_ok=True)
        try:
            held = open(folder / native_cache.LOCK, "a")
        except FileNotFoundError:  # pruned (native_cache) between the two calls
            continue
        with held:
            fcntl.flock(held, fcntl.LOCK_EX)
            if not _still_there(held, folder / native_cache.LOCK):
                continue  # the folder was pruned while we waited: make it anew
            (folder / TOOLING_LOCK).unlink(missing_ok=True)
            yield
            return
    raise OSError(f"{folder}: removed again each time it was made")


def _still_there(held: IO[str], path: Path) -> bool:
    """Whether the lock file open as `held` is still the one at `path` (not renamed away)."""
    try:
        return os.path.samestat(os.fstat(held.fileno()), os.stat(path))
    except FileNotFoundError:
        return False


if __name__ == "__main__":  # python -m runtime_shim.backend.native: build now (tools/setup.sh does)
    module = load()
    print(f"runtime_shim native part: {build_directory() if module else python_path_reason}")
    sys.exit(0 if module else 1)
