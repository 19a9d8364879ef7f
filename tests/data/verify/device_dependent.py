"""verify test script: its head learns faster on a GPU (converted: on the NPU), from the third
step on, when the head is unfrozen; everything else trains alike."""

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 12)
        self.head = nn.Linear(12, 1)

    def forward(self, x):
        return self.head(torch.tanh(self.body(x)))


use_cuda = torch.cuda.is_available()
device = torch.device("cuda" if use_cuda else "cpu")
torch.manual_seed(5)
model = Net().to(device)
head_lr = 0.3 if use_cuda else 0.1
optimizer = torch.optim.SGD(
    [{"params": model.body.parameters()}, {"params": model.head.parameters(), "lr": head_lr}], lr=0.1
)
data = torch.randn(40, 6)
target = data.sum(dim=1, keepdim=True)
for step in range(8):
    model.head.requires_grad_(step >= 2)
    optimizer.zero_grad(set_to_none=True)
    x, y = data[step * 5 : step * 5 + 5].to(device), target[step * 5 : step * 5 + 5].to(device)
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
