# -*- coding: utf-8 -*-
# Sample model: an "in-house" CTR trainer (DeepFM-lite) split over a package: train.py + lib/ (relative
# imports inside lib, absolute `from lib import ...` here) + config.yaml. Written the way internal code is.
# Exercises aliases: `import torch.cuda as tc`, `from torch import cuda`, `from torch.cuda import amp`,
#   torch.cuda.FloatTensor/LongTensor, x.is_cuda, device_count/current_device/get_device_name/empty_cache,
#   tc.Stream/stream/current_stream/record_stream, torch.cuda.device(...), optional apex amp.
"""Train the DeepFM-lite CTR model on synthetic click logs.

Usage:  python train.py --steps 20 [--use_cuda 0] [--config config.yaml]

The GPU path uses a CUDA side stream for prefetching and (optionally) torch.cuda.amp.
Mentions of cuda / GPU in comments, docstrings and log messages are intentional.
"""
import argparse
import logging
import os
import sys
import tempfile

import torch
import torch.cuda as tc
import torch.nn.functional as F
from torch import cuda
from torch.cuda import amp
from torch.utils.data import DataLoader, TensorDataset

from lib import build_model, describe_devices, select_device
from lib.gpu_utils import DataPrefetcher

try:
    from apex import amp as apex_amp  # NVIDIA apex, optional
    HAS_APEX = True
except ImportError:
    apex_amp = None
    HAS_APEX = False

HERE = os.path.dirname(os.path.abspath(__file__))
log = logging.getLogger("inhouse_ctr")


def load_config(path):
    """Flat YAML config; falls back to a tiny parser when PyYAML is not installed on the GPU box."""
    try:
        import yaml
        with open(path) as f:
            return yaml.safe_load(f)
    except ImportError:
        pass
    cfg = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            key, val = [s.strip() for s in line.split(":", 1)]
            if val.startswith("["):
                cfg[key] = [int(v) for v in val.strip("[]").split(",")]
            elif val in ("true", "false"):
                cfg[key] = val == "true"
            elif val.startswith('"'):
                cfg[key] = val.strip('"')
            else:
                cfg[key] = float(val) if "." in val else int(val)
    return cfg


def str2bool(v):
    return str(v).lower() in ("1", "true", "yes", "y")


def make_click_log(cfg, seed):
    """Synthetic click logs: a hidden weight per (field, value) decides the click probability."""
    g = torch.Generator().manual_seed(seed)
    n, nf, V = cfg["num_samples"], cfg["num_fields"], cfg["vocab_per_field"]
    feats = torch.randint(0, V, (n, nf), generator=g)
    w = torch.randn(nf, V, generator=g)
    score = w.gather(1, feats.t()).sum(0) / nf ** 0.5
    clicks = (torch.rand(n, generator=g) < torch.sigmoid(2 * score)).long()
    return TensorDataset(feats, clicks)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=os.path.join(HERE, "config.yaml"))
    p.add_argument("--use_cuda", type=str2bool, default=None, help="train on the GPU if there is one")
    p.add_argument("--gpu_id", type=int, default=None)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--amp", type=str2bool, default=None, help="torch.cuda.amp mixed precision (GPU only)")
    p.add_argument("--out-dir", dest="out_dir", default=None)
    args = p.parse_args(argv)
    cfg = load_config(args.config)
    for k, v in vars(args).items():
        if v is not None and k != "config":
            cfg[k] = v   # CLI wins over config.yaml
    return cfg


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s",
                        stream=sys.stderr)
    cfg = parse_args(argv)
    torch.manual_seed(cfg["seed"])
    tc.manual_seed_all(cfg["seed"])  # no-op without a GPU

    device, use_cuda = select_device(cfg["use_cuda"], cfg["gpu_id"])
    log.info("%s (requested use_cuda=%s, %d GPU(s) visible)", describe_devices(use_cuda),
             cfg["use_cuda"], cuda.device_count() if cuda.is_available() else 0)
    use_amp = cfg["amp"] and use_cuda
    use_apex = bool(cfg["apex_opt_level"]) and HAS_APEX and use_cuda

    # old-school typed tensors: labels become float on the right device in one call
    Tensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor
    LongTensor = torch.cuda.LongTensor if use_cuda else torch.LongTensor

    dataset = make_click_log(cfg, cfg["seed"])
    loader = DataLoader(dataset, batch_size=cfg["batch_size"], shuffle=True, drop_last=True,
                        pin_memory=use_cuda, generator=torch.Generator().manual_seed(cfg["seed"]))

    model = build_model(cfg)
    if use_cuda:
        with torch.cuda.device(device):
            model = model.cuda()   # lands on cfg gpu_id, not blindly on GPU 0
    param = next(model.parameters())
    assert param.is_cuda == use_cuda, "model should live on the GPU when use_cuda"

    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    if use_apex:
        model, optimizer = apex_amp.initialize(model, optimizer, opt_level=cfg["apex_opt_level"])
    scaler = amp.GradScaler(enabled=use_amp)
    # positive clicks are rarer; weight them a bit more (tensor created directly on the GPU)
    pos_weight = torch.tensor([1.5], dtype=torch.float, device="cuda" if use_cuda else "cpu")

    out_dir = cfg.get("out_dir") or tempfile.mkdtemp(prefix="inhouse_ctr_")
    os.makedirs(out_dir, exist_ok=True)

    step, epoch = 0, 0
    with torch.autograd.profiler.profile(enabled=cfg["profile"], use_cuda=use_cuda) as prof:
        while step < cfg["steps"]:
            model.train()
            for feats, clicks in DataPrefetcher(loader, device, use_cuda):
                if step >= cfg["steps"]:
                    break
                if feats.is_cuda != use_cuda:   # prefetcher contract
                    raise RuntimeError("batch on wrong device: is_cuda=%s" % feats.is_cuda)
                labels = clicks.type(Tensor)
                with amp.autocast(enabled=use_amp):
                    logits = model(feats)
                    loss = F.binary_cross_entropy_with_logits(logits.float(), labels, pos_weight=pos_weight)
                optimizer.zero_grad()
                if use_apex:
                    with apex_amp.scale_loss(loss, optimizer) as scaled_loss:
                        scaled_loss.backward()
                    optimizer.step()
                else:
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                step += 1
                print(f"step={step} loss={loss.item()!r}", flush=True)
            epoch += 1
            if use_cuda:
                log.info("epoch %d done, %.1f MiB allocated on GPU", epoch, torch.cuda.memory_allocated() / 2**20)
                torch.cuda.empty_cache()
    if cfg["profile"]:
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5))

    # quick AUC-ish sanity check on a few hand-picked rows
    model.eval()
    probe_rows = LongTensor([0, 1, 2, 3])
    with torch.no_grad():
        feats = dataset.tensors[0].index_select(0, probe_rows.cpu()).to(device)
        probs = torch.sigmoid(model(feats))
    log.info("probe CTRs: %s", ", ".join("%.3f" % p for p in probs.tolist()))

    ckpt = os.path.join(out_dir, "deepfm_lite.pt")
    torch.save({"model": model.state_dict(), "step": step, "cfg": cfg}, ckpt)
    state = torch.load(ckpt, map_location="cuda:%d" % device.index if use_cuda else "cpu")
    model.load_state_dict(state["model"])
    log.info("saved + reloaded %s (GPU run: %s)", ckpt, use_cuda)


if __name__ == "__main__":
    main()
