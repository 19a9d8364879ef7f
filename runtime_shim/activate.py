"""Turning the simulated NPU on: device install, ``import torch_npu``, child processes."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types
from collections.abc import Sequence

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_BOOT_DIR = os.path.join(_PACKAGE_DIR, "_boot")
_STUB_PACKAGE = "runtime_shim.torch_npu_stub"
# Ascend's apex (mixed precision, fused optimizers), simulated when no apex is installed.
_APEX_PACKAGE = "runtime_shim.apex_stub"
# torch_npu submodules that are modules of runtime_shim itself: torch_npu.npu[.X] is
# runtime_shim.npu[.X], except where the module has another name or place here.
_ALIASES = {
    "torch_npu.npu": "runtime_shim.npu",
    "torch_npu.npu.random": "runtime_shim.npu.rng",
    "torch_npu.npu.amp": "runtime_shim.autocast.amp",
}
#: torch.npu submodules clients import by name (`import torch.npu.random`), as torch_npu has them.
TORCH_NPU_SUBMODULES = ("amp", "random", "utils")
#: Set in the environment of an activated process so that children activate too.
ENV_ACTIVE = "RUNTIME_SHIM_ACTIVE"

_lock = threading.RLock()
_active = False


def real_torch_npu_installed() -> bool:
    """True if a real ``torch_npu`` is importable (runtime_shim then stays out of the way)."""
    module = sys.modules.get("torch_npu")
    if module is not None:
        return not getattr(module, "__runtime_shim__", False)
    return importlib.machinery.PathFinder.find_spec("torch_npu") is not None


def is_active() -> bool:
    """Whether the simulated device is installed in this process."""
    return _active


def activate() -> bool:
    """Install the simulated ``npu`` device and make ``import torch_npu`` work.

    Returns False (and changes nothing) when a real torch_npu is installed.
    Idempotent. Child processes started afterwards activate themselves.
    """
    global _active
    with _lock:
        if _active:
            return True
        if real_torch_npu_installed():
            return False
        from runtime_shim.torch_version import check_torch_version

        check_torch_version()
        from runtime_shim import npu, patches
        from runtime_shim.autocast import policy as autocast_policy
        from runtime_shim.backend import attention, registration
        from runtime_shim.diagnostics import findings, opcheck
        from runtime_shim.runtime import ipc

        registration.install(npu)
        autocast_policy.install()
        for submodule in TORCH_NPU_SUBMODULES:
            sys.modules.setdefault(f"torch.npu.{submodule}", getattr(npu, submodule))
        opcheck.configure_from_env()
        _register_extras()
        # The CPU's attention and dropout choice, over any operator-check recorder of those ops.
        attention.install()
        patches.install()
        findings.configure_from_env()
        ipc.install()
        install_import_hook()
        _export_to_children()
        _active = True
        return True


def _register_extras() -> None:
    # Distributed support is an optional piece of the device; a PyTorch build
    # without distributed still gets a working npu.
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - depends on the torch build
        return
    if dist.is_available():
        from runtime_shim.backend import distributed

        distributed.register()


class _StubLoader(importlib.abc.Loader):
    """Loads ``torch_npu[.X]`` as the already-imported ``runtime_shim.torch_npu_stub[.X]``."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        activate()
        return importlib.import_module(self.target)

    def exec_module(self, module: types.ModuleType) -> None:
        # The target module ran its code when create_module imported it.
        return None


class _TorchNpuFinder(importlib.abc.MetaPathFinder):
    """Resolves ``torch_npu`` to the stub, unless a real torch_npu is on the path."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "apex" or fullname.startswith("apex."):
            return _apex_spec(fullname)
        if fullname != "torch_npu" and not fullname.startswith("torch_npu."):
            if fullname == "torch.npu" and not _active:
                # Activation registers torch.npu in sys.modules; the default
                # machinery then finds it there.
                activate()
            return None
        if fullname == "torch_npu" and importlib.machinery.PathFinder.find_spec("torch_npu") is not None:
            return None  # a real torch_npu: never shadow it
        target_name = _ALIASES.get(fullname)
        if target_name is None and fullname.startswith("torch_npu.npu."):
            target_name = "runtime_shim.npu" + fullname[len("torch_npu.npu") :]
        target_name = target_name or _STUB_PACKAGE + fullname[len("torch_npu") :]
        if importlib.util.find_spec(target_name) is None:
            raise ModuleNotFoundError(f"{fullname} is not simulated by runtime_shim", name=fullname)
        is_package = fullname in ("torch_npu", "torch_npu.npu")
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(target_name), is_package=is_package)


def _apex_spec(fullname: str) -> importlib.machinery.ModuleSpec | None:
    """``apex[.X]`` as ``runtime_shim.apex_stub[.X]``, unless an apex is installed."""
    root = sys.modules.get("apex")
    if root is not None and not getattr(root, "__runtime_shim__", False):
        return None
    if importlib.machinery.PathFinder.find_spec("apex") is not None:
        return None  # a real apex: never shadow it
    target_name = _APEX_PACKAGE + fullname[len("apex") :]
    if importlib.util.find_spec(target_name) is None:
        raise ModuleNotFoundError(f"{fullname} is not simulated by runtime_shim", name=fullname)
    return importlib.machinery.ModuleSpec(fullname, _StubLoader(target_name), is_package=fullname == "apex")


_finder = _TorchNpuFinder()


def install_import_hook() -> None:
    """Put the ``torch_npu`` finder on ``sys.meta_path`` (once). Does not import torch."""
    if not any(isinstance(f, _TorchNpuFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _finder)


def _export_to_children() -> None:
    # Spawned children (torch.multiprocessing.spawn, spawn/forkserver DataLoader
    # workers, plain subprocesses of python) start a fresh interpreter. The boot
    # directory's sitecustomize installs the import hook there, so their
    # `import torch_npu` activates the device again. Forked children inherit it.
    os.environ[ENV_ACTIVE] = "1"
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    wanted = [_BOOT_DIR, os.path.dirname(_PACKAGE_DIR)]
    os.environ["PYTHONPATH"] = os.pathsep.join(wanted + [p for p in parts if p not in wanted])
