"""word_language_model's ending: the model is saved whole (on its device), then loaded back and
evaluated. In the distributed version rank 0 saves and every rank loads after the barrier, so each
rank must load onto its own device; each rank writes where its loaded model is and its test loss
to a file of its own (prints are rank 0's alone in the distributed version).
"""

import argparse
import os

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--save", default="model.pt")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x = torch.randn(16, 8)
    y = x.sum(dim=1, keepdim=True)
    model = nn.Sequential(nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(2):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x.to(device)), y.to(device)).backward()
        optimizer.step()
    with open(args.save, "wb") as f:
        torch.save(model, f)
    with open(args.save, "rb") as f:
        model = torch.load(f, weights_only=False)
    with torch.no_grad():
        test = nn.functional.mse_loss(model(x.to(device)), y.to(device)).item()
    where = next(model.parameters()).device
    with open(f"loaded.{os.environ.get('RANK', '0')}.txt", "w") as out:
        out.write(f"loaded on {where} test={test!r}")


if __name__ == "__main__":
    main()
