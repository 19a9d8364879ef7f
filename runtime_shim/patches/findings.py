"""The runtime findings' patches of torch (diagnostics/findings.py): each watched entry point counts
a finding, then does what it did before.

* every public function of ``torch.cuda`` and ``torch.cuda.amp`` (classes are left alone:
  replacing them would break ``isinstance``; a CUDA GradScaler or autocast shows as
  ``amp_disabled``);
* ``torch.cuda._lazy_init``, which torch calls (from C++ too) whenever a cuda device is used;
* the ``warnings`` module as torch's GradScaler and autocast modules see it, for their
  "CUDA is not available ... Disabling" warnings (the process's own ``warnings`` is untouched);
* ``torch.distributed.init_process_group`` and ``new_group``, for a nccl backend.
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.cuda
import torch.cuda.amp

_installed = False


def install(findings: Any) -> None:
    """Watch CUDA's entry points for ``findings`` (a diagnostics.findings.Findings); once per process."""
    global _installed
    if _installed:
        return
    _installed = True
    for module, prefix in ((torch.cuda, "torch.cuda"), (torch.cuda.amp, "torch.cuda.amp")):
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name, None)
            if inspect.isfunction(value):
                setattr(module, name, _watched_call(findings, value, f"{prefix}.{name}"))
    torch.cuda._lazy_init = _watched_lazy_init(findings, torch.cuda._lazy_init)
    amp_warnings = _AmpWarnings(findings)
    for module_name in ("torch.amp.grad_scaler", "torch.amp.autocast_mode"):
        module = __import__(module_name, fromlist=["warnings"])
        if getattr(module, "warnings", None) is warnings:
            module.warnings = amp_warnings  # type: ignore[attr-defined]  # those modules call warnings.warn
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - depends on the torch build
        return
    if dist.is_available():
        dist.init_process_group = _watched_backend(findings, dist.init_process_group, "init_process_group")
        dist.new_group = _watched_backend(findings, dist.new_group, "new_group")


def _watched_call(findings: Any, function: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def watched(*args: Any, **kwargs: Any) -> Any:
        # torch's own calls (torch.amp asking is_available) are not the script's
        if not findings.sites.caller_is_outside():
            return function(*args, **kwargs)
        findings.add("cuda_call", label)
        findings.inside(1)
        try:
            return function(*args, **kwargs)
        finally:
            findings.inside(-1)

    return watched


def _watched_lazy_init(findings: Any, lazy_init: Callable[[], Any]) -> Callable[[], Any]:
    @functools.wraps(lazy_init)
    def watched_lazy_init() -> Any:
        findings.add("cuda_device", "a cuda device reached torch (CUDA initialised)")
        return lazy_init()

    return watched_lazy_init


class _AmpWarnings(types.SimpleNamespace):
    """``warnings`` for torch.amp's modules: its "CUDA is not available ... Disabling" warnings are findings."""

    def __init__(self, findings: Any) -> None:
        super().__init__()
        self._findings = findings

    def warn(
        self, message: Any, category: Any = None, stacklevel: int = 1, *args: Any, **kwargs: Any
    ) -> None:
        text = str(message)
        if "CUDA is not available" in text and "Disabling" in text:
            what = (
                "torch GradScaler('cuda') disabled: CUDA is not available (no loss scaling)"
                if "GradScaler" in text
                else "torch autocast('cuda') disabled: CUDA is not available (no mixed precision)"
            )
            self._findings.add("amp_disabled", what)
        warnings.warn(message, category, stacklevel + 1, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(warnings, name)


def _watched_backend(findings: Any, function: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def watched(*args: Any, **kwargs: Any) -> Any:
        backend = kwargs.get("backend", args[0] if args and name == "init_process_group" else None)
        if name == "new_group" and len(args) > 2:
            backend = args[2]
        if isinstance(backend, str) and "nccl" in backend.lower():
            findings.add("nccl", f"{name}(backend={backend!r})")
        return function(*args, **kwargs)

    return watched
