"""The DDP tutorial's checkpoint step, as written for GPUs: `ddp_checkpoint.py PRETRAINED OUT_DIR PORT`.

PRETRAINED was saved on cuda:0 (a GPU machine's checkpoint): every rank maps it to its own
device. After a training step rank 0 saves the model and every rank loads that checkpoint
with the same map_location. Each rank writes what it loaded, where, to OUT_DIR/rank<N>.json.
The tests convert it and run the result on the simulated NPU with hccl.
"""

# ruff: noqa: UP031 (the %-formatted devices GPU scripts use are what is converted)

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def summary(state):
    return {key: [str(value.device), value.sum().item()] for key, value in state.items()}


def worker(rank, world_size, pretrained, out_dir, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    model = torch.nn.Linear(4, 2).cuda(rank)
    map_location = {"cuda:%d" % 0: "cuda:%d" % rank}
    start = torch.load(pretrained, map_location=map_location)
    model.load_state_dict(start)
    ddp_model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    ddp_model(torch.full((3, 4), float(rank + 1)).cuda(rank)).sum().backward()
    optimizer.step()
    path = os.path.join(out_dir, "ddp_checkpoint.pt")
    if rank == 0:
        torch.save(ddp_model.state_dict(), path)
    dist.barrier()
    resumed = torch.load(path, map_location=map_location)
    ddp_model.load_state_dict(resumed)
    result = {"pretrained": summary(start), "resumed": summary(resumed)}
    result["parameters"] = sorted({str(p.device) for p in ddp_model.parameters()})
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as out:
        json.dump(result, out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, sys.argv[1], sys.argv[2], sys.argv[3]), nprocs=2)
