"""accelerate with 2 processes: run under `python -m runtime_shim` (npu, hccl) or plain (cpu, gloo).

Usage: client_accelerate_ddp.py npu|cpu OUT_DIR PORT. Each rank sets the variables a launcher sets,
builds an Accelerator, trains a DDP-wrapped model a few steps, then gathers, reduces and pads
across processes. Writes OUT_DIR/result.<rank>.json.
"""

import json
import os
import sys
from pathlib import Path

import torch
import torch.multiprocessing as mp

MODE, OUT, PORT = sys.argv[1], Path(sys.argv[2]), sys.argv[3]


def run(rank):
    if MODE == "npu":
        import runtime_shim

        runtime_shim.activate()
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=PORT
    )
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    set_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    data = torch.utils.data.TensorDataset(
        torch.randn(32, 8, generator=g), torch.randint(0, 4, (32,), generator=g)
    )
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    accelerator = Accelerator(cpu=MODE == "cpu")
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(accelerator.reduce(loss.detach(), reduction="mean").item())
    device = accelerator.device
    ragged = torch.arange(float(rank + 2), device=device)
    result = {
        "device": str(device),
        "backend": str(accelerator.state.backend),
        "losses": losses,
        "weights": [
            p.detach().cpu().flatten().tolist() for p in accelerator.unwrap_model(model).parameters()
        ],
        "gather": accelerator.gather(torch.tensor([rank, 10 + rank], device=device)).cpu().tolist(),
        "gather_2d": accelerator.gather(torch.full((2, 3), float(rank), device=device)).cpu().tolist(),
        "reduce_sum": accelerator.reduce(torch.tensor([1.0, float(rank)], device=device)).cpu().tolist(),
        "padded": accelerator.pad_across_processes(ragged).cpu().tolist(),
        "gather_object": accelerator.gather_for_metrics([rank], use_gather_object=True),
    }
    accelerator.wait_for_everyone()
    (OUT / f"result.{rank}.json").write_text(json.dumps(result))
    accelerator.wait_for_everyone()
    # Every rank has written its results: leave without tearing the groups down. The CPU
    # reference (stock gloo, end_training() then exit) hung once in five runs on a loaded
    # machine; where was not established. The teardown of hccl groups is tested in
    # test_distributed.py.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    mp.spawn(run, nprocs=2)
