"""Modern c10d features on one device type: `dist_features.py MODES DEVICE OUT [--spawn N PORT]`.

Run under torchrun (rank from the environment) or with ``--spawn`` (mp.spawn).
DEVICE is ``npu`` (backend hccl, under runtime_shim) or ``cpu`` (gloo, native
torch); each rank writes ``OUT.MODE.RANK`` as JSON so a test can compare the two.
MODES: one or more of mesh1d, mesh2d, tp, sp, fsdp1, fsdp2, dcp, comma-separated; they run one
after the other in one process group (one launch: process start-up is most of a case's time).
"""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.device_mesh import init_device_mesh


class Block(nn.Module):
    """A tiny transformer-style block: norm, MLP up/down, residual."""

    def __init__(self, dim=8, hidden=16):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.head = nn.Linear(dim, 4)

    def forward(self, x):
        h = x + self.down(torch.relu(self.up(self.norm(x))))
        return self.head(h)


def batches(device, rank, steps=3, same=False):
    g = torch.Generator().manual_seed(100 + (0 if same else rank))
    for _ in range(steps):
        yield (
            torch.randn(4, 6, 8, generator=g).to(device),
            torch.randint(0, 4, (4, 6), generator=g).to(device),
        )


def train(model, device, rank, same=False):
    # foreach=False: a TP model mixes DTensor and plain parameters
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=False)
    losses = []
    for x, y in batches(device, rank, same=same):
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def full_params(model):
    from torch.distributed.tensor import DTensor

    out = []
    for p in model.parameters():
        p = p.full_tensor() if isinstance(p, DTensor) else p
        out.append(p.detach().cpu().flatten().tolist())
    return out


def mesh_checks(device_type, shape, names):
    mesh = init_device_mesh(device_type, shape, mesh_dim_names=names)
    rank = dist.get_rank()
    result = {"names": [mesh.get_group(n).group_name for n in names], "device": device_type}
    for name in names:
        group = mesh.get_group(name)
        t = torch.full((2,), float(rank + 1), device=device_type)
        dist.all_reduce(t, group=group)
        result[f"all_reduce_{name}"] = t.tolist()
        x = torch.arange(4, dtype=torch.float32, device=device_type) + 10 * rank
        result[f"funcol_all_reduce_{name}"] = funcol.all_reduce(x, "sum", (mesh, names.index(name))).tolist()
        result[f"funcol_all_gather_{name}"] = funcol.all_gather_tensor(
            x, 0, (mesh, names.index(name))
        ).tolist()
        result[f"funcol_reduce_scatter_{name}"] = funcol.reduce_scatter_tensor(
            x, "sum", 0, (mesh, names.index(name))
        ).tolist()
    world = dist.get_world_size()
    x = torch.arange(2 * world, dtype=torch.float32, device=device_type) + 100 * rank
    gathered = torch.empty(2 * world * world, device=device_type)
    dist.all_gather_into_tensor(gathered, x)
    scattered = torch.empty(2, device=device_type)
    dist.reduce_scatter_tensor(scattered, x)
    swapped = torch.empty_like(x)
    dist.all_to_all_single(swapped, x)
    work = dist.all_reduce(x, async_op=True)
    work.wait()
    ts = [torch.full((3,), float(rank + i), device=device_type) for i in range(3)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t)
    cm.wait()
    pair = [t.clone() for t in ts[:2]]
    dist.all_reduce_coalesced(pair)
    if device_type == "npu":
        dist.barrier(device_ids=[torch.npu.current_device()])
    else:
        dist.barrier()
    sub, _ = dist.new_subgroups(group_size=2)
    s = torch.ones(1, device=device_type) * rank
    dist.all_reduce(s, group=sub)
    result.update(
        gathered=gathered.tolist(),
        scattered=scattered.tolist(),
        swapped=swapped.tolist(),
        async_all_reduce=x.tolist(),
        coalesced=[t.tolist() for t in ts],
        all_reduce_coalesced=[t.tolist() for t in pair],
        subgroup=s.tolist(),
        tensor_device=str(gathered.device.type),
    )
    return result


def run(mode, device_type, out, rank):
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    world = dist.get_world_size()
    torch.manual_seed(0)
    # An explicit index: the simulated npu maps a bare "npu" in Tensor.to() to npu:0
    device = torch.device(device_type, rank) if device_type == "npu" else torch.device("cpu")
    if mode in ("mesh1d", "mesh2d"):
        shape, names = ((world,), ("dp",)) if mode == "mesh1d" else ((2, world // 2), ("dp", "tp"))
        result = mesh_checks(device_type, shape, names)
    elif mode in ("tp", "sp"):
        mesh = init_device_mesh(device_type, (world,), mesh_dim_names=("tp",))
        model = Block().to(device)
        from torch.distributed.tensor import Shard

        plan = {"up": ColwiseParallel(), "down": RowwiseParallel()}
        if mode == "sp":
            plan = {
                "norm": SequenceParallel(),
                "up": ColwiseParallel(input_layouts=Shard(1)),
                "down": RowwiseParallel(output_layouts=Shard(1)),
            }
        parallelize_module(model, mesh, plan)
        result = {"losses": train(model, device, rank, same=True), "params": full_params(model)}
    elif mode == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import MixedPrecision

        # A CPU module: FSDP moves it to device_id itself, as a CUDA script relies on.
        fsdp = FSDP(
            Block(),
            device_id=device,
            use_orig_params=True,
            mixed_precision=MixedPrecision(reduce_dtype=torch.float32),
        )
        result = {"losses": train(fsdp, device, rank)}
        with FSDP.summon_full_params(fsdp):
            result["params"] = [p.detach().cpu().flatten().tolist() for p in fsdp.parameters()]
    elif mode in ("fsdp2", "dcp"):
        import torch.distributed.checkpoint as dcp
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh(device_type, (world,))
        model = Block().to(device)
        fully_shard(model.up, mesh=mesh)
        fully_shard(model, mesh=mesh)
        result = {"losses": train(model, device, rank), "params": full_params(model)}
        if mode == "dcp":
            path = f"{out}.ckpt"
            dcp.save({"model": model.state_dict()}, checkpoint_id=path)
            torch.manual_seed(1)
            fresh = Block().to(device)
            fully_shard(fresh, mesh=mesh)
            state = {"model": fresh.state_dict()}
            dcp.load(state, checkpoint_id=path)
            fresh.load_state_dict(state["model"])
            result["reloaded"] = full_params(fresh)
            result["shard_device"] = next(iter(fresh.parameters())).to_local().device.type
    else:
        raise SystemExit(f"unknown mode {mode}")
    with open(f"{out}.{rank}.partial", "w") as fh:
        json.dump(result, fh)
    os.replace(f"{out}.{rank}.partial", f"{out}.{rank}")  # a result file is whole or absent


def worker(rank, modes, device_type, out, world, port):
    if port is not None:
        os.environ.update(
            MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world)
        )
        os.environ["LOCAL_RANK"] = str(rank)
    if device_type == "npu":
        import torch_npu  # noqa: F401

        torch.npu.set_device(rank)
    dist.init_process_group("hccl" if device_type == "npu" else "gloo")
    try:
        for mode in modes.split(","):
            run(mode, device_type, f"{out}.{mode}", dist.get_rank())
            # no rank closes its connections (or starts the next mode) while another still reads
            # its part of the last collective
            dist.barrier()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    modes, device_type, out = sys.argv[1:4]
    if "--spawn" in sys.argv:
        i = sys.argv.index("--spawn")
        world, port = int(sys.argv[i + 1]), int(sys.argv[i + 2])
        mp.spawn(worker, args=(modes, device_type, out, world, port), nprocs=world, join=True)
    else:
        worker(int(os.environ["RANK"]), modes, device_type, out, int(os.environ["WORLD_SIZE"]), None)
