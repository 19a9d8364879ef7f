"""verify test script: a small CUDA-guarded MLP (dropout, Adam, a StepLR) that trains alike on
the CPU and, converted, on the simulated NPU."""

import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=16)
args = parser.parse_args()

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
inputs, targets = torch.randn(64, 8), torch.randn(64, 1)  # the seed verify sets decides them
for epoch in range(args.epochs):
    for start in range(0, 64, args.batch_size):
        x = inputs[start : start + args.batch_size].to(device)
        y = targets[start : start + args.batch_size].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    scheduler.step()
    print(f"epoch {epoch} loss {loss.item():.6f}")
