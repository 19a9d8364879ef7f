"""Flat-buffer collectives in every shape NCCL/HCCL accept, 2 ranks over hccl on the npu.

Usage: flat_collectives.py OUT_JSON PORT. Each rank writes OUT_JSON.<rank>: name -> values.
"""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, out, port):
    import runtime_shim

    runtime_shim.activate()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    dist.init_process_group("hccl", rank=rank, world_size=world)
    dev = torch.device("npu", rank)
    torch.npu.set_device(dev)
    part = torch.arange(6.0, device=dev).view(2, 3) + 10 * rank
    whole = torch.arange(world * 6.0, device=dev) + rank
    results = {}
    for name, shape in [("flat", (world * 6,)), ("stacked", (world, 2, 3)), ("concat", (world * 2, 3))]:
        output = torch.empty(shape, device=dev)
        dist.all_gather_into_tensor(output, part)
        results[f"all_gather_into_tensor/{name}"] = output.flatten().tolist()
        reduced = torch.empty(2, 3, device=dev)
        dist.reduce_scatter_tensor(reduced, whole.view(shape))
        results[f"reduce_scatter_tensor/{name}"] = reduced.flatten().tolist()
    scalar_out = torch.empty(world, device=dev)
    dist.all_gather_into_tensor(scalar_out, torch.tensor(float(rank + 1), device=dev))
    results["all_gather_into_tensor/0-dim"] = scalar_out.tolist()
    dist.barrier()
    dist.destroy_process_group()
    with open(f"{out}.{rank}.partial", "w") as fh:
        json.dump(results, fh)
    os.replace(f"{out}.{rank}.partial", f"{out}.{rank}")


if __name__ == "__main__":
    mp.spawn(run, args=(2, sys.argv[1], sys.argv[2]), nprocs=2)
