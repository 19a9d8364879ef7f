"""Step records for ``ms_fmk_transplt verify``: the loss and every parameter's digest, per step.

The runtime installs this in every Python process of a verification run, the original's on the
CPU and the converted script's on the simulated NPU alike; the script is never edited. With
``RUNTIME_SHIM_RECORD=DIR`` in the environment and ``runtime_shim/_boot`` on ``PYTHONPATH``,
the boot ``sitecustomize`` calls ``install_when_torch_loads()``: nothing happens until the
process imports torch, and the simulated NPU is not activated by it.

Once torch is loaded:

* ``torch.autograd.backward`` (what ``Tensor.backward()`` calls) is wrapped to remember the
  value of the tensor backward was called on (the loss; the scaled loss under a GradScaler);
* torch.optim's global optimizer-step post hook writes, after every ``optimizer.step()``, one
  JSON line to ``DIR/rank<R>.pid<P>.jsonl``: the step number, the rank, the losses since the
  previous step and ``[name, shape, dtype, digest]`` of every parameter that optimizer holds,
  named through the root ``nn.Module`` that owns it, plus the simulated device's peak memory and
  the dtypes of the enabled autocasts entered so far (``autocast``: how precise the run computes);
* a process that calls ``backward()`` a second time without any optimizer existing updates
  its weights by hand (pytorch/examples' word_language_model): each later ``backward()`` then
  closes the previous step, with the digests of every module parameter;
* ``RUNTIME_SHIM_RECORD_STEPS=N`` raises ``SystemExit(0)`` once step N is written (0: no
  limit); an ``{"end": ...}`` line is written at exit. ``RUNTIME_SHIM_RECORD_SEED=S`` seeds
  torch, ``random`` and numpy when torch loads, so a script that seeds nothing still starts
  both runs alike.

Reading the records back never runs torch: the converter's ``verify`` package parses the
lines. This module imports only torch, numpy when installed (to seed it), the standard library
and its patch of torch (runtime_shim/patches/step_record.py), never the simulated npu.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
import weakref
from dataclasses import dataclass
from typing import Any

ENV_DIR = "RUNTIME_SHIM_RECORD"
ENV_STEPS = "RUNTIME_SHIM_RECORD_STEPS"
ENV_SEED = "RUNTIME_SHIM_RECORD_SEED"


def digest(tensor: Any) -> str:
    """Hex blake2b digest of a tensor's values (its dtype's bytes, row-major), read on the host."""
    import torch

    to_local = getattr(tensor, "to_local", None)
    if callable(to_local):  # a DTensor (FSDP2, tensor parallel): this rank's shard
        tensor = to_local()
    with torch.no_grad():
        host = tensor.to("cpu").contiguous().reshape(-1)
        data = host.view(torch.uint8) if host.numel() else host
        return hashlib.blake2b(data.numpy().tobytes(), digest_size=16).hexdigest()


def _digest_or_why(tensor: Any) -> str:
    """digest(), or why the tensor could not be read (recording must never break the script)."""
    try:
        return digest(tensor)
    except Exception as exc:  # a tensor subclass or layout the host copy does not handle
        return f"unreadable: {type(exc).__name__}"


def _loss_value(tensor: Any) -> float | str:
    """A scalar's value as a float (exact for every float dtype); a larger tensor's digest."""
    import torch

    with torch.no_grad():
        if tensor.numel() == 1 and tensor.dtype.is_floating_point:
            to_local = getattr(tensor, "to_local", None)
            value = to_local() if callable(to_local) else tensor
            return float(value.to("cpu").reshape(()).item())
    return "digest:" + _digest_or_why(tensor)


@dataclass(frozen=True)
class Owner:
    """The root module a parameter belongs to (its id in this process, its class) and its name there."""

    root: int
    root_class: str
    name: str


class ParameterNames:
    """Names of parameters, by the root modules that own them (found by a heap walk, on demand)."""

    def __init__(self) -> None:
        self._owners: dict[int, tuple[weakref.ref[Any], Owner]] = {}
        self._unnamed: set[int] = set()

    def owner(self, param: Any) -> Owner | None:
        """The root module that owns the parameter and its dotted name there, or None if none does."""
        known = self._owners.get(id(param))
        if known is not None and known[0]() is param:
            return known[1]
        if id(param) not in self._unnamed:
            self._rebuild()
            known = self._owners.get(id(param))
            if known is not None and known[0]() is param:
                return known[1]
            self._unnamed.add(id(param))
        return None

    def step_names(self, params: list[Any]) -> list[str | None]:
        """The names one step records for ``params``: the dotted name in the owning root module, and,
        when they have several roots (an Embedding, an LSTM and a Linear made apart, no common
        module), the root's class first (``Linear:weight``; ``Linear#1:weight`` for a second
        Linear root), so that no two parameters of a step share a name."""
        owners = [self.owner(param) for param in params]
        roots: dict[int, str] = {}
        for found in owners:
            if found is not None and found.root not in roots:
                same_class = sum(1 for label in roots.values() if label.split("#")[0] == found.root_class)
                roots[found.root] = found.root_class + (f"#{same_class}" if same_class else "")
        if len(roots) <= 1:
            return [None if found is None else found.name for found in owners]
        return [None if found is None else f"{roots[found.root]}:{found.name}" for found in owners]

    def _rebuild(self) -> None:
        import torch

        modules = _live(torch.nn.Module)
        children = {id(child) for module in modules for child in module.children()}
        roots = [module for module in modules if id(module) not in children]
        owners: dict[int, list[tuple[Owner, Any]]] = {}
        for root in roots:
            for name, param in root.named_parameters(remove_duplicate=False):
                owners.setdefault(id(param), []).append((Owner(id(root), type(root).__name__, name), param))
        self._owners.clear()
        self._unnamed.clear()
        for key, found in owners.items():
            # several roots holding one parameter (an EMA copy sharing it, a module kept beside
            # its wrapper): the shortest name wins, so both runs pick the same one
            found.sort(key=lambda item: (len(item[0].name), item[0].name, item[0].root_class))
            self._owners[key] = (weakref.ref(found[0][1]), found[0][0])

    def module_parameters(self) -> list[tuple[str, Any]]:
        """Every parameter of every root module, named, in a stable order (hand-written updates)."""
        import torch

        modules = _live(torch.nn.Module)
        children = {id(child) for module in modules for child in module.children()}
        seen: set[int] = set()
        named: list[tuple[str, Any]] = []
        for root in modules:
            if id(root) in children:
                continue
            for name, param in root.named_parameters():
                if param.requires_grad and id(param) not in seen:
                    seen.add(id(param))
                    named.append((f"{type(root).__name__}:{name}", param))
        named.sort(key=lambda item: item[0])
        return named


class Recorder:
    """Writes one JSON line per step of this process; stops the process after ``limit`` steps."""

    def __init__(self, folder: str, limit: int) -> None:
        self.folder = folder
        self.limit = limit
        self.steps = 0
        self.losses: list[float | str] = []
        self.backwards = 0
        self.by_hand = False
        self.optimizers: dict[int, int] = {}
        self.autocast: set[str] = set()  # the dtypes of the enabled autocasts entered so far
        self.names = ParameterNames()
        self._file: Any = None
        self._ended = False

    # -- events -----------------------------------------------------------------------------
    def on_backward(self, tensor: Any) -> None:
        """Before a backward(): remember the loss; in hand-update mode, close the previous step."""
        self.backwards += 1
        if not self.steps and not self.by_hand and self.backwards == 2 and not _optimizers_exist():
            self.by_hand = True
        if self.by_hand and self.losses:
            params = self.names.module_parameters()
            self._write_step(None, [(name, p) for name, p in params])
        self.losses.append(_loss_value(tensor))

    def on_autocast(self, dtype: Any) -> None:
        """An enabled autocast was entered: the run computes in ``dtype`` (verify's tolerance)."""
        self.autocast.add(str(dtype).removeprefix("torch."))

    def on_step(self, optimizer: Any) -> None:
        """After an optimizer's step: record its parameters and the losses since the last step."""
        if self.by_hand:
            return
        positions = [
            (group_index, index, param)
            for group_index, group in enumerate(optimizer.param_groups)
            for index, param in enumerate(group["params"])
        ]
        names = self.names.step_names([param for _, _, param in positions])
        named = [
            (name or f"param_groups[{group_index}][{index}]", param)
            for name, (group_index, index, param) in zip(names, positions)
        ]
        number = self.optimizers.setdefault(id(optimizer), len(self.optimizers))
        self._write_step(number, named)

    # -- output -----------------------------------------------------------------------------
    def _write_step(self, optimizer: int | None, named: list[tuple[str, Any]]) -> None:
        self.steps += 1
        record = {
            "step": self.steps,
            "rank": _rank(),
            "optimizer": optimizer,
            "losses": self.losses,
            "params": [
                [name, list(p.shape), str(p.dtype).removeprefix("torch."), _digest_or_why(p)]
                for name, p in named
            ],
            "memory": device_memory(),
            "autocast": sorted(self.autocast),
        }
        self.losses = []
        self._write(record)
        if self.limit and self.steps >= self.limit:
            self.end("limit")
            raise SystemExit(0)

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            os.makedirs(self.folder, exist_ok=True)
            path = os.path.join(self.folder, f"rank{_rank()}.pid{os.getpid()}.jsonl")
            self._file = open(path, "a", encoding="utf-8")
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def end(self, reason: str) -> None:
        """Write the closing line once (``limit`` or ``exit``); nothing for a process that never stepped."""
        if self._ended:
            return
        self._ended = True
        if self.by_hand and self.losses and reason == "exit":
            # the interpreter is going down: a last step that cannot be read is left out
            with contextlib.suppress(Exception, SystemExit):
                self._write_step(None, self.names.module_parameters())
        if self._file is None:
            return
        self._file.write(json.dumps({"end": reason, "steps": self.steps, "memory": device_memory()}) + "\n")
        self._file.close()


def _live(cls: type) -> list[Any]:
    """Live objects of ``cls`` (type() rather than isinstance: some module objects warn on __class__)."""
    return [obj for obj in gc.get_objects() if issubclass(type(obj), cls)]


def _optimizers_exist() -> bool:
    import torch

    return bool(_live(torch.optim.Optimizer))


def _rank() -> int:
    """The process's rank: the default process group's, else torchrun's RANK, else 0."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def device_memory() -> dict[str, list[int]]:
    """``{"npu:I": [peak allocated, peak reserved]}`` of the simulated devices used; {} elsewhere."""
    import torch

    npu = getattr(torch, "npu", None)
    if npu is None or not getattr(npu, "is_available", lambda: False)():
        return {}
    used = {}
    for index in range(npu.device_count()):
        peak = npu.max_memory_allocated(index)
        if peak:
            used[f"npu:{index}"] = [peak, npu.max_memory_reserved(index)]
    return used


RECORDER: Recorder | None = None


def install(folder: str, limit: int = 0, seed: int | None = None) -> Recorder:
    """Start recording in this process (imports torch); returns the recorder."""
    global RECORDER
    from torch.optim.optimizer import register_optimizer_step_post_hook

    if RECORDER is not None:
        return RECORDER
    recorder = RECORDER = Recorder(folder, limit)
    from runtime_shim.patches import step_record as patch

    patch.record_backward(recorder.on_backward)
    patch.record_autocast(recorder.on_autocast)
    register_optimizer_step_post_hook(lambda optimizer, args, kwargs: recorder.on_step(optimizer))
    atexit.register(recorder.end, "exit")
    if seed is not None:
        _seed_everything(seed)
    return recorder


def _seed_everything(seed: int) -> None:
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(seed)


def install_from_env() -> Recorder | None:
    """install() from RUNTIME_SHIM_RECORD / _STEPS / _SEED; None when recording is off."""
    folder = os.environ.get(ENV_DIR)
    if not folder:
        return None
    seed = os.environ.get(ENV_SEED)
    return install(folder, int(os.environ.get(ENV_STEPS) or 0), int(seed) if seed else None)


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Runs install_from_env() right after ``import torch`` completes, then leaves sys.meta_path."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _InstallingLoader(spec.loader)
        return spec


class _InstallingLoader(importlib.abc.Loader):
    """Torch's own loader, followed by the recorder's installation."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        install_from_env()

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ... for tracebacks and tools
        return getattr(self._loader, name)


def install_when_torch_loads() -> None:
    """Record from the moment this process imports torch (now if it already has); torch is not imported here."""
    if not os.environ.get(ENV_DIR):
        return
    if "torch" in sys.modules:
        install_from_env()
    elif not any(isinstance(finder, _AfterTorch) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterTorch())
