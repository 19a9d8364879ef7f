"""Forked children and the npu: DataLoader workers returning npu tensors, strict-mode refusal.

Run under ``python -m runtime_shim``; prints one JSON line. ``RUNTIME_SHIM_STRICT`` is read
when a child forks, so the script sets it around the strict cases.
"""

from __future__ import annotations

import json
import os

import torch
import torch.multiprocessing as mp
import torch_npu  # noqa: F401  (what a converted script imports)


class OnNpu(torch.utils.data.Dataset):
    """A dataset whose items are made on the npu inside the worker."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.full((2,), float(i), device="npu:0")


def use_npu(tensor: torch.Tensor) -> None:
    """Compute on the npu in a forked child."""
    (tensor + 1).sum().item()


def load(strict: bool) -> dict:
    """Iterate a one-worker (fork) DataLoader over npu items; what arrived or the error."""
    os.environ["RUNTIME_SHIM_STRICT"] = "1" if strict else "0"
    loader = torch.utils.data.DataLoader(OnNpu(), batch_size=2, num_workers=1)
    try:
        batches = list(loader)
    except RuntimeError as exc:
        return {"error": str(exc).splitlines()[-1]}
    return {"devices": sorted({str(b.device) for b in batches}), "values": [b.tolist() for b in batches]}


def fork_exitcode(strict: bool, tensor: torch.Tensor) -> int | None:
    """Exit code of a forked child that computes on the npu."""
    os.environ["RUNTIME_SHIM_STRICT"] = "1" if strict else "0"
    child = mp.get_context("fork").Process(target=use_npu, args=(tensor,))
    child.start()
    child.join()
    return child.exitcode


def main() -> None:
    """Run the cases after the parent has used the npu (torch_npu's condition for refusing)."""
    tensor = torch.ones(2, device="npu:0")
    print(
        json.dumps(
            {
                "loader": load(strict=False),
                "loader_strict": load(strict=True),
                "fork": fork_exitcode(strict=False, tensor=tensor),
                "fork_strict": fork_exitcode(strict=True, tensor=tensor),
            }
        )
    )


if __name__ == "__main__":
    main()
