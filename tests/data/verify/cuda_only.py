"""verify test script: hard-coded CUDA (cannot run on a CPU-only machine), and a float64 matmul
a real NPU does not run."""

import torch
import torch.nn as nn

model = nn.Linear(4, 2).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
projection = torch.randn(2, 2, dtype=torch.float64).cuda()
for _step in range(6):
    x = torch.randn(8, 4).cuda()
    out = model(x)
    penalty = (out.double() @ projection).pow(2).mean()
    loss = out.pow(2).mean() + penalty.float()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done")
