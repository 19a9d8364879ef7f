"""A single-device training script as users write them: the distributed mode's end-to-end input.

Rank 0 of the distributed version prints every step's loss and each epoch's test loss (repr, all
digits) and saves a CPU copy of the weights.
"""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def evaluate(model, loader, device):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for xb, yb in loader:
            total += nn.functional.mse_loss(model(xb.to(device)), yb.to(device), reduction="sum").item()
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--no-shuffle", action="store_true")
    parser.add_argument("--save", default="weights.pt")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=g)
    y = x @ torch.randn(8, 1, generator=g) + 0.1 * torch.randn(64, 1, generator=g)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=not args.no_shuffle)
    test_loader = DataLoader(TensorDataset(x[:32], y[:32]), batch_size=32)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        model.train()
        for step, (xb, yb) in enumerate(train_loader):
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            print(f"epoch={epoch} step={step} loss={loss.item()!r}")
        print(f"epoch={epoch} test={evaluate(model, test_loader, device)!r}")
    state = {name: value.detach().cpu() for name, value in model.state_dict().items()}
    torch.save(state, args.save)


if __name__ == "__main__":
    main()
