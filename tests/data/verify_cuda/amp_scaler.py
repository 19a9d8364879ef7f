"""verify test script: fp16 autocast with a GradScaler through torch.cuda.amp. It runs on the CPU,
where torch switches both off with a warning and trains in fp32: not what it does on a GPU."""

import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Linear(24, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.cuda.amp.GradScaler()
for _ in range(6):
    x = torch.randn(16, 12, device=device)
    with torch.cuda.amp.autocast():
        loss = model(x).float().pow(2).mean()
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
print("done")
