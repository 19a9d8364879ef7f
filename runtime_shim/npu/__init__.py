"""``torch.npu`` (= ``torch_npu.npu``) for the simulated device, one module per feature.

Names in torch_npu's ``__all__`` that are simulated come from the feature modules below; every
other name of that list resolves to a callable that raises
``NotImplementedError("torch.npu.X is not simulated by runtime_shim")`` when used, so a converted
script never silently skips device work. ``torch.npu.amp`` is ``amp.py`` in this package, ``torch.npu.random`` is ``rng.py`` and
``torch.npu.utils`` is ``utils.py`` (torch_npu's module of that name, over the same functions).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any, NoReturn

from runtime_shim.autocast.flags import *  # noqa: F403
from runtime_shim.not_simulated import module_getattr as _module_getattr
from runtime_shim.npu.devices import *  # noqa: F403
from runtime_shim.npu.devices import _index, _is_in_bad_fork, _lazy_init  # noqa: F401  (torch calls these)
from runtime_shim.npu.memory import *  # noqa: F403
from runtime_shim.npu.options import *  # noqa: F403
from runtime_shim.npu.rng import *  # noqa: F403
from runtime_shim.npu.streams import *  # noqa: F403
from runtime_shim.npu.typed_tensors import *  # noqa: F403
from runtime_shim.npu.typed_tensors import _TypedTensorMeta  # noqa: F401  (the Tensor.type patch checks it)
from runtime_shim.torch_version import data_file


def _load_all_names() -> list[str]:
    data = json.loads(data_file("npu_api_names.json").read_text(encoding="utf-8"))
    names: set[str] = set()
    for release_names in data["releases"].values():
        names.update(release_names)
    return sorted(names)


def _not_simulated(name: str) -> Callable[..., NoReturn]:
    message = f"torch.npu.{name} is not simulated by runtime_shim"

    def unavailable(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(message)

    unavailable.__name__ = name
    unavailable.__qualname__ = name
    unavailable.__doc__ = message
    return unavailable


__all__ = _load_all_names()
_NOT_SIMULATED = sorted(name for name in __all__ if name not in globals())
for _name in _NOT_SIMULATED:
    globals()[_name] = _not_simulated(_name)
del _name


# Submodules that read the names above: torch.npu.amp, torch.npu.random (rng.py), torch.npu.utils.
from runtime_shim.autocast import amp  # noqa: E402,F401
from runtime_shim.npu import rng as random  # noqa: E402,F401
from runtime_shim.npu import utils  # noqa: E402,F401

# torch_npu's own submodules: torch.npu.amp, .memory, .random, .streams, .utils
_SUBMODULES = ("amp", "memory", "random", "streams", "utils")
# Every other public name the assembly above left here is the runtime's own (its state, its
# feature modules, the typing and json it imports): a script that used one would pass on the
# simulation and fail on Ascend, so none is visible (names of other torch_npu releases' lists
# stay: they raise "not simulated", as on a release that lacks them)
for _name in [n for n in globals() if not n.startswith("_") and n not in __all__ and n not in _SUBMODULES]:
    del globals()[_name]

if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu")
