"""accelerate on a tiny model: run under `python -m runtime_shim` (npu) or plain (cpu).

Usage: client_accelerate.py npu|cpu OUT_DIR [PRECISION]. The optimizer is built before
prepare() (so prepare must keep the parameter objects); a few steps, save_state, more steps,
load_state, the same steps again. Writes OUT_DIR/result-PRECISION.json.
"""

import json
import sys
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed

MODE, OUT = sys.argv[1], Path(sys.argv[2])
PRECISION = sys.argv[3] if len(sys.argv) > 3 else "no"

set_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(1)
data = torch.utils.data.TensorDataset(
    torch.randn(32, 8, generator=g), torch.randint(0, 4, (32,), generator=g)
)
loader = torch.utils.data.DataLoader(data, batch_size=8)
# accelerate turns fp16 off on the CPU: the CPU reference does by hand what it does on an
# accelerator (autocast to float16 around forward, outputs back to float32, a GradScaler).
MANUAL_FP16 = MODE == "cpu" and PRECISION == "fp16"
accelerator = Accelerator(cpu=MODE == "cpu", mixed_precision="no" if MANUAL_FP16 else PRECISION)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
scaler = torch.amp.GradScaler("cpu") if MANUAL_FP16 else None
if scaler is not None:
    accelerator.register_for_checkpointing(scaler)


def forward(x):
    if MANUAL_FP16:
        with torch.autocast("cpu", dtype=torch.float16):
            return model(x).float()
    return model(x)


def run_epoch():
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(forward(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            accelerator.backward(loss)
            optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def weights():
    return [p.detach().float().cpu().flatten().tolist() for p in accelerator.unwrap_model(model).parameters()]


first = run_epoch()
accelerator.save_state(str(OUT / f"state-{PRECISION}"))
second = run_epoch()
after_second = weights()
accelerator.load_state(str(OUT / f"state-{PRECISION}"))
again = run_epoch()
gathered = accelerator.gather(torch.tensor([1.0, 2.0], device=accelerator.device)).cpu().tolist()
result = {
    "device": str(accelerator.device),
    "first": first,
    "second": second,
    "again": again,
    "weights": after_second,
    "resumed_equal": weights() == after_second,
    "gathered": gathered,
}
(OUT / f"result-{PRECISION}.json").write_text(json.dumps(result))
