"""2-process DDP: `ddp_script.py BACKEND DEVICE OUT.json PORT` (hccl+npu under runtime_shim, gloo+cpu natively)."""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, backend, device_type, out, port):
    if device_type == "npu":
        import torch_npu  # noqa: F401

        torch.npu.set_device(rank)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend, rank=rank, world_size=2)
    device = torch.device(device_type, rank) if device_type == "npu" else torch.device("cpu")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to(device)
    ddp = DDP(model, device_ids=[rank] if device_type == "npu" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    losses = []
    for _ in range(4):
        x = torch.randn(8, 6, generator=g).to(device)
        y = torch.randint(0, 3, (8,), generator=g).to(device)
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    total = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(total)
    params = [p.detach().cpu().flatten().tolist() for p in model.parameters()]
    with open(f"{out}.{rank}.partial", "w") as fh:
        json.dump(
            {"losses": losses, "params": params, "allreduce": total.item(), "device": str(total.device)}, fh
        )
    os.replace(f"{out}.{rank}.partial", f"{out}.{rank}")
    # Neither rank tears its group down while the other may still be inside a collective.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    backend, device_type, out, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    mp.spawn(worker, args=(backend, device_type, out, port), nprocs=2, join=True)
