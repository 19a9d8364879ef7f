"""verify test script: rank 1 raises at its second step, under torchrun (RANK in the environment)
or under mp.spawn (--spawn); the other rank waits for it and is stopped by the launcher."""

import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def check(rank: int, step: int) -> None:
    if rank == 1 and step == 1:
        raise RuntimeError(f"rank {rank} lost its data shard at step {step}")


def train(rank: int, world_size: int) -> None:
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        check(rank, step)
        loss = model(torch.randn(8, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    if "--spawn" in sys.argv:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        mp.spawn(train, args=(2,), nprocs=2, join=True)
    else:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
