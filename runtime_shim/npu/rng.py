"""torch.npu's random-number API: npu random ops draw from the host default generator."""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any

import torch

from runtime_shim.not_simulated import module_getattr as _module_getattr
from runtime_shim.npu.devices import _index, device_count

# The simulated device draws random numbers from the host default generator:
# that is what makes a converted script bit-identical to the original run on
# CPU. Seeding the npu therefore seeds that generator; scripts seed torch and
# the device with the same value, which leaves the stream unchanged.


def manual_seed(seed: int) -> None:
    """Seed the generator used for npu random ops (the host default generator)."""
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed the generator of all npu devices (they share the host generator)."""
    manual_seed(seed)


def seed() -> None:
    """Seed the npu generator with a non-deterministic number."""
    torch.default_generator.seed()


def seed_all() -> None:
    """Same as seed(): all devices share one generator."""
    seed()


def initial_seed() -> int:
    """The seed of the npu generator."""
    return torch.default_generator.initial_seed()


def get_rng_state(device: Any = "npu") -> torch.Tensor:
    """State of the npu generator (a CPU ByteTensor, as torch_npu returns)."""
    _index(device)
    return torch.default_generator.get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "npu") -> None:
    """Restore a state returned by get_rng_state."""
    _index(device)
    torch.default_generator.set_state(new_state.cpu())


def get_rng_state_all() -> list[torch.Tensor]:
    """One state per device."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    """Restore states from get_rng_state_all (devices share one generator)."""
    for state in new_states:
        set_rng_state(state)


if not _TYPE_CHECKING:  # hidden from mypy, which then still checks every name read from here
    __getattr__ = _module_getattr("torch.npu.random")
