"""verify test script: torchrun-launched DDP, nccl on a GPU and gloo elsewhere (hccl once converted)."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

use_cuda = torch.cuda.is_available()
dist.init_process_group("nccl" if use_cuda else "gloo")
rank = dist.get_rank()
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
if use_cuda:
    torch.cuda.set_device(local_rank)
device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
torch.manual_seed(0)
model = DDP(
    nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1)).to(device),
    device_ids=[local_rank] if use_cuda else None,
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
generator = torch.Generator().manual_seed(100 + rank)
for _step in range(6):
    x = torch.randn(4, 5, generator=generator).to(device)
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.destroy_process_group()
