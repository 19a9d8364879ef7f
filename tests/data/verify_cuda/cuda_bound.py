"""verify test script: assumes a GPU unconditionally (.cuda(), torch.cuda.synchronize()), so it
cannot run on a CPU-only machine."""

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
data = torch.randn(64, 10)
target = torch.randint(0, 3, (64,))
for step in range(8):
    x = data[step * 8 : (step + 1) * 8].cuda(non_blocking=True)
    y = target[step * 8 : (step + 1) * 8].cuda()
    started = time.perf_counter()
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    torch.cuda.synchronize()
    print(f"step {step} loss {loss.item():.4f} {time.perf_counter() - started:.3f}s")
