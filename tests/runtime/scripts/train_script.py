"""A converted training script: run as `python -m runtime_shim train_script.py OUT.json EXTRA...`."""

import json
import os
import sys

import torch
import torch.multiprocessing as mp
import torch_npu
from torch.utils.data import DataLoader, TensorDataset


def child(rank, out_dir):
    # A spawned child: a fresh interpreter that re-imports this file as __mp_main__.
    t = torch.ones(3, device=f"npu:{rank}") * (rank + 1)
    with open(os.path.join(out_dir, f"child{rank}.json"), "w") as fh:
        json.dump({"device": str(t.device), "sum": t.sum().item(), "shim": torch_npu.__runtime_shim__}, fh)


def main():
    out = sys.argv[1]
    torch.npu.set_device(0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).npu()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = DataLoader(data, batch_size=8, num_workers=2, pin_memory=True)
    losses = []
    for x, y in loader:
        x, y = x.to("npu:0"), y.npu()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out_dir = os.path.dirname(os.path.abspath(out))
    mp.spawn(child, args=(out_dir,), nprocs=2, join=True)
    result = {
        "argv": sys.argv,
        "name": __name__,
        "losses": losses,
        "device": str(next(model.parameters()).device),
        "children": [json.load(open(os.path.join(out_dir, f"child{r}.json"))) for r in range(2)],
        "npu_count": torch.npu.device_count(),
    }
    with open(out, "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
