"""Attention sharded by heads over an npu DeviceMesh equals unsharded attention, bit for bit.

Run under torchrun with runtime_shim; each rank prints one line: ``rank=R forward=B backward=B``.
"""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torch_npu  # noqa: F401
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

mesh = init_device_mesh("npu", (int(os.environ["WORLD_SIZE"]),))  # no init_process_group: the mesh makes it
generator = torch.Generator().manual_seed(0)
query, key, value = (torch.randn(2, 4, 6, 8, generator=generator) for _ in range(3))


def attention(sharded: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
    inputs = [t.to("npu") for t in (query, key, value)]
    if sharded:
        inputs = [distribute_tensor(t, mesh, [Shard(1)]) for t in inputs]
    for t in inputs:
        t.requires_grad_()
    out = F.scaled_dot_product_attention(*inputs, is_causal=True)
    full = out.full_tensor() if sharded else out
    full.sum().backward()
    grads = [t.grad.full_tensor() if sharded else t.grad for t in inputs]
    return full.detach().cpu(), [g.cpu() for g in grads]


plain, plain_grads = attention(sharded=False)
shard, shard_grads = attention(sharded=True)
forward = torch.equal(plain, shard)
backward = all(torch.equal(a, b) for a, b in zip(plain_grads, shard_grads, strict=True))
print(f"rank={dist.get_rank()} forward={forward} backward={backward}", flush=True)
dist.destroy_process_group()
