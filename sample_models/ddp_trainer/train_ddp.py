# Sample model: single-node DistributedDataParallel trainer (MLP + BatchNorm) that self-launches with mp.spawn.
# Exercises: init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo"), LOCAL_RANK /
#   CUDA_VISIBLE_DEVICES / NCCL_* env vars, torch.cuda.set_device(i), torch.cuda.device_count(),
#   DDP(device_ids=[i], output_device=i), SyncBatchNorm, DistributedSampler, dist.all_reduce/barrier/
#   destroy_process_group, torch.load(map_location={"cuda:0": "cuda:N"}).
"""Usage:
    python train_ddp.py --world-size 2 --steps 20          # spawns 2 local workers itself
    torchrun --nproc_per_node 2 train_ddp.py --steps 20    # or let torchrun launch them
"""
import argparse
import math
import os
import socket
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

# Same defaults our cluster launch scripts export; harmless when NCCL is not used.
os.environ.setdefault("NCCL_DEBUG", "WARN")
os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")


class BlobDataset(Dataset):
    """Gaussian blobs in 20-D, 4 classes; identical on every rank (seeded)."""

    def __init__(self, n=512, dim=20, classes=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        centers = 2.0 * torch.randn(classes, dim, generator=g)
        self.y = torch.randint(0, classes, (n,), generator=g)
        self.x = centers[self.y] + torch.randn(n, dim, generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]


class Classifier(nn.Module):
    def __init__(self, dim=20, hidden=64, classes=4):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.net(x)


def find_free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(rank, world_size, device_id):
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        # must happen before init_process_group so NCCL picks the right GPU
        torch.cuda.set_device(device_id)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend, init_method="env://",
                            world_size=world_size, rank=rank)
    return use_cuda


def cleanup():
    dist.destroy_process_group()


def log0(rank, *a):
    if rank == 0:
        print(*a, flush=True)


def worker(local_rank, args):
    # torchrun exports RANK/LOCAL_RANK/WORLD_SIZE; mp.spawn only hands us the index.
    rank = int(os.environ.get("RANK", local_rank))
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    # more ranks than GPUs (e.g. a 1-GPU dev box) -> ranks share devices round-robin
    device_id = local_rank % max(1, torch.cuda.device_count())
    use_cuda = setup(rank, world_size, device_id)
    torch.manual_seed(args.seed)
    if use_cuda:
        torch.cuda.manual_seed_all(args.seed)
        device = torch.device("cuda", device_id)
    else:
        device = torch.device("cpu")

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    log0(rank, f"world_size={world_size} backend={dist.get_backend()} device={device} "
               f"CUDA_VISIBLE_DEVICES={visible if visible is not None else '<unset>'}")

    model = Classifier()
    if use_cuda and args.sync_bn:
        # BN statistics across all GPUs; SyncBatchNorm only runs on GPU
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(device)
    if use_cuda:
        ddp_model = DDP(model, device_ids=[device_id], output_device=device_id)
    else:
        ddp_model = DDP(model)

    dataset = BlobDataset(seed=args.seed)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank,
                                 shuffle=True, seed=args.seed, drop_last=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, pin_memory=use_cuda, drop_last=True)

    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=args.lr * world_size, momentum=0.9)
    epochs = max(args.epochs, math.ceil(args.steps / len(loader)))

    step = 0
    t0 = time.time()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)  # reshuffle differently every epoch, identically on every rank
        ddp_model.train()
        for x, y in loader:
            if step >= args.steps:
                break
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(ddp_model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            # average the per-rank losses only for logging (gradients are already averaged by DDP)
            loss_avg = loss.detach().clone()
            dist.all_reduce(loss_avg, op=dist.ReduceOp.SUM)
            loss_avg /= world_size
            if rank == 0:
                print(f"step={step} loss={loss_avg.item()!r}", flush=True)
    log0(rank, f"training took {time.time() - t0:.2f}s on {world_size} processes")

    # rank 0 writes the checkpoint; the others wait and then load it, remapping rank 0's GPU to theirs
    ckpt_path = os.path.join(args.out_dir, "ddp_checkpoint.pt")
    if rank == 0:
        torch.save(ddp_model.module.state_dict(), ckpt_path)
    dist.barrier()
    if use_cuda:
        map_location = {"cuda:%d" % 0: "cuda:%d" % device_id}
    else:
        map_location = "cpu"
    state = torch.load(ckpt_path, map_location=map_location)
    ddp_model.module.load_state_dict(state)

    # evaluate on this rank's shard and all-reduce the counts
    ddp_model.eval()
    correct = torch.zeros(2, device=device)
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            pred = ddp_model(x).argmax(dim=1)
            correct[0] += (pred == y).sum()
            correct[1] += y.numel()
    dist.all_reduce(correct)
    log0(rank, f"accuracy after reload: {correct[0].item() / correct[1].item():.3f}")

    dist.barrier()
    cleanup()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world-size", type=int, default=2, help="processes to spawn (one per GPU)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16, help="per-process batch size")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--sync-bn", action="store_true", help="use SyncBatchNorm (GPU only)")
    parser.add_argument("--out-dir", default=None, help="checkpoint directory (default: temp dir)")
    args = parser.parse_args()
    if args.out_dir is None and "LOCAL_RANK" in os.environ:
        # torchrun workers are separate processes: they must agree on one checkpoint folder
        run_id = os.environ.get("TORCHELASTIC_RUN_ID", "none")
        args.out_dir = os.path.join(tempfile.gettempdir(), f"ddp_trainer_{run_id}_{os.environ['MASTER_PORT']}")
    args.out_dir = args.out_dir or tempfile.mkdtemp(prefix="ddp_trainer_")
    os.makedirs(args.out_dir, exist_ok=True)

    if "LOCAL_RANK" in os.environ:  # launched by torchrun
        worker(int(os.environ["LOCAL_RANK"]), args)
        return

    if torch.cuda.is_available() and torch.cuda.device_count() < args.world_size:
        print(f"only {torch.cuda.device_count()} GPUs visible, "
              f"some ranks will share a device")
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(find_free_port())
    mp.spawn(worker, args=(args,), nprocs=args.world_size, join=True)


if __name__ == "__main__":
    main()
