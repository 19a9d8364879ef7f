"""verify test script: no optimizer, weights updated by hand after backward() (pytorch/examples'
word_language_model does this)."""

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 1).to(device)
for _step in range(5):
    x = torch.randn(6, 3).to(device)
    loss = model(x).pow(2).mean()
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-0.1)
