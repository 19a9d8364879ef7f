"""Every kind of collective on 2 ranks of hccl, printed as JSON: run under RUNTIME_SHIM_STRICT=1.

Usage: torchrun --nproc-per-node 2 -m runtime_shim strict_collectives.py OUT_PREFIX
"""

from __future__ import annotations

import json
import sys

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("npu", rank)
    torch.npu.set_device(device)
    out: dict[str, object] = {"rank": rank}

    t = torch.full((2,), float(rank + 1), device=device)
    dist.all_reduce(t)
    out["all_reduce"] = t.tolist()

    t = torch.full((2,), float(rank + 10), device=device)
    dist.broadcast(t, src=0)
    out["broadcast"] = t.tolist()

    parts = [torch.empty(2, device=device) for _ in range(world)]
    dist.all_gather(parts, torch.full((2,), float(rank), device=device))
    out["all_gather"] = [p.tolist() for p in parts]

    whole = torch.empty(2 * world, device=device)
    dist.all_gather_into_tensor(whole, torch.full((2,), float(rank), device=device))
    out["all_gather_into_tensor"] = whole.tolist()

    part = torch.empty(2, device=device)
    dist.reduce_scatter(part, [torch.full((2,), float(r + rank), device=device) for r in range(world)])
    out["reduce_scatter"] = part.tolist()

    part = torch.empty(2, device=device)
    dist.reduce_scatter_tensor(part, torch.arange(2.0 * world, device=device))
    out["reduce_scatter_tensor"] = part.tolist()

    dist.barrier()
    out["barrier"] = True

    t = torch.full((2,), float(rank + 5), device=device)
    if rank == 0:
        dist.send(t, dst=1)
    else:
        dist.recv(t, src=0)
    out["send_recv"] = t.tolist()

    with open(f"{sys.argv[1]}.{rank}", "w", encoding="utf-8") as handle:
        json.dump(out, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
