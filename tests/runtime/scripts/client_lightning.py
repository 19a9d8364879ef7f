"""Lightning with a custom NPU accelerator: run under `python -m runtime_shim` (npu) or plain (cpu).

Usage: client_lightning.py npu|cpu OUT_DIR. Lightning has no NPU accelerator of its own; users
register one like this. A few steps of a tiny module; writes OUT_DIR/result.json.
"""

import json
import sys
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.accelerators import Accelerator
from lightning.pytorch.strategies import SingleDeviceStrategy

MODE, OUT = sys.argv[1], Path(sys.argv[2])


class NPUAccelerator(Accelerator):
    """The accelerator Ascend users write for Lightning."""

    def setup_device(self, device):
        torch.npu.set_device(device)

    def teardown(self):
        torch.npu.empty_cache()

    @staticmethod
    def parse_devices(devices):
        return devices

    @staticmethod
    def get_parallel_devices(devices):
        return [torch.device("npu", i) for i in range(devices)]

    @staticmethod
    def auto_device_count():
        return torch.npu.device_count()

    @staticmethod
    def is_available():
        return torch.npu.is_available()

    @staticmethod
    def name():
        return "npu"

    def get_device_stats(self, device):
        return {"allocated": torch.npu.memory_allocated(device)}


class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
        self.losses = []

    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.losses.append(loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)


L.seed_everything(0)
model = Tiny()
g = torch.Generator().manual_seed(1)
data = torch.utils.data.TensorDataset(
    torch.randn(32, 8, generator=g), torch.randint(0, 3, (32,), generator=g)
)
loader = torch.utils.data.DataLoader(data, batch_size=8)
if MODE == "npu":
    accelerator = NPUAccelerator()
    extra = {
        "strategy": SingleDeviceStrategy(device="npu:0", accelerator=accelerator),
    }
else:
    extra = {"accelerator": "cpu", "devices": 1}
trainer = L.Trainer(
    max_epochs=2,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    default_root_dir=str(OUT),
    **extra,
)
trainer.fit(model, loader)
result = {
    "device": str(next(model.parameters()).device) if MODE == "cpu" else str(trainer.strategy.root_device),
    "losses": model.losses,
    "weights": [p.detach().cpu().flatten().tolist() for p in model.parameters()],
}
(OUT / "result.json").write_text(json.dumps(result))
