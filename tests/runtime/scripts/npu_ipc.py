"""npu tensors shared with child processes; prints one JSON object of observations.

Usage: python -m runtime_shim npu_ipc.py fork|spawn
"""

import json
import sys

import torch
import torch.multiprocessing as mp
import torch_npu  # noqa: F401


def hogwild_child(model, rank):
    with torch.no_grad():
        for p in model.parameters():
            p.add_(rank + 1)  # the parent must see every child's write


def train_child(model, seed):
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(8, 4, generator=generator).to("npu")
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def producer(queue, done):
    base = torch.arange(6.0, device="npu").view(2, 3)
    queue.put((base, base[1]))  # a tensor and a view of it
    done.wait()
    queue.put(base.sum().item())  # what the child sees after the parent's write


def double(t):
    t.mul_(2)
    return t.device.type


def main(method):
    ctx = mp.get_context(method)
    seen = {}

    model = torch.nn.Linear(4, 2).to("npu")
    model.share_memory()
    before = [p.detach().cpu().clone() for p in model.parameters()]
    for rank in range(2):  # one after the other: the sum is exact
        p = ctx.Process(target=hogwild_child, args=(model, rank))
        p.start()
        p.join()
    after = [p.detach().cpu() for p in model.parameters()]
    seen["hogwild_exact"] = all(torch.equal(a, b + 3) for a, b in zip(after, before, strict=True))
    seen["param_device"] = str(next(model.parameters()).device)
    seen["is_shared"] = next(model.parameters()).is_shared()

    trained = torch.nn.Linear(4, 2).to("npu")
    trained.share_memory()
    start = trained.weight.detach().cpu().clone()
    workers = [ctx.Process(target=train_child, args=(trained, seed)) for seed in range(2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join()
    seen["hogwild_trained"] = not torch.equal(start, trained.weight.detach().cpu())
    seen["exit_codes"] = [p.exitcode for p in workers]

    queue, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=producer, args=(queue, done))
    p.start()
    base, row = queue.get()
    seen["queue_device"] = str(base.device)
    seen["queue_values"] = base.cpu().tolist()
    seen["view_aliases"] = row.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    base.add_(10)
    done.set()
    seen["child_sees_parent_write"] = queue.get()
    p.join()

    shared = torch.ones(3, device="npu")
    with ctx.Pool(1) as pool:
        seen["pool_device"] = pool.map(double, [shared])[0]
    seen["pool_write"] = shared.cpu().tolist()
    print(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv[1])
