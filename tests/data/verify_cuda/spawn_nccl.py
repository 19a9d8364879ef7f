"""verify test script: one process per GPU with mp.spawn and NCCL, as DDP tutorials write it. On a
CPU-only machine torch.cuda.device_count() is 0: no process is started and nothing trains."""

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank: int, world_size: int, port: int) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1)).cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = torch.Generator().manual_seed(rank)
    for _ in range(5):
        x = torch.randn(16, 6, generator=generator).to(f"cuda:{rank}")
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.barrier()
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


if __name__ == "__main__":
    world_size = torch.cuda.device_count()
    print(f"training on {world_size} GPU(s)")
    mp.spawn(train, args=(world_size, free_port()), nprocs=world_size, join=True)
