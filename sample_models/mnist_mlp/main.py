# Sample model: MNIST-style classifier (pytorch/examples "mnist" shape) on synthetic 28x28 digits.
# Exercises: --no-cuda flag, torch.cuda.is_available(), torch.device("cuda"), model.to(device),
#   DataLoader num_workers/pin_memory kwargs chosen by use_cuda, tensor.to(device),
#   torch.save(state_dict) + torch.load(..., map_location=device).
# Run: python main.py --steps 20 --seed 1 --out-dir /tmp/mnist_mlp
from __future__ import print_function

import argparse
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    """Two conv layers + two fully connected layers, with dropout (runs fine on a GPU or a laptop)."""

    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 12 * 12, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def make_fake_mnist(n, seed):
    """Blobby 'digits': each class lights up its own 7x7 patch, plus noise. No download needed."""
    g = torch.Generator().manual_seed(seed)
    targets = torch.randint(0, 10, (n,), generator=g)
    images = 1.0 * torch.randn(n, 1, 28, 28, generator=g)
    for cls in range(10):
        r, c = divmod(cls, 4)
        mask = targets == cls
        images[mask, :, r * 7:(r + 1) * 7, c * 7:(c + 1) * 7] += 0.8
    # same normalisation constants as the real MNIST example
    images = (images - 0.1307) / 0.3081
    return TensorDataset(images, targets)


def train(args, model, device, train_loader, optimizer, epoch, global_step):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        if args.steps is not None and global_step >= args.steps:
            break
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        global_step += 1
        print(f"step={global_step} loss={loss.item()!r}", flush=True)
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
            if args.dry_run:
                break
    return global_step


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return test_loss


def main():
    # Training settings
    parser = argparse.ArgumentParser(description='PyTorch MNIST-like Example (synthetic data)')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N',
                        help='input batch size for training (default: 32)')
    parser.add_argument('--test-batch-size', type=int, default=128, metavar='N',
                        help='input batch size for testing (default: 128)')
    parser.add_argument('--epochs', type=int, default=1, metavar='N',
                        help='number of epochs to train (default: 1)')
    parser.add_argument('--steps', type=int, default=None, metavar='N',
                        help='stop after this many optimizer steps (extends --epochs if needed)')
    parser.add_argument('--lr', type=float, default=1.0, metavar='LR',
                        help='learning rate (default: 1.0)')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M',
                        help='Learning rate step gamma (default: 0.7)')
    parser.add_argument('--no-cuda', action='store_true', default=False,
                        help='disables CUDA training')
    parser.add_argument('--dry-run', action='store_true', default=False,
                        help='quickly check a single pass')
    parser.add_argument('--seed', type=int, default=1, metavar='S',
                        help='random seed (default: 1)')
    parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                        help='how many batches to wait before logging training status')
    parser.add_argument('--num-train', type=int, default=640,
                        help='number of synthetic training images')
    parser.add_argument('--out-dir', type=str, default=None,
                        help='where to write mnist_cnn.pt (default: a fresh temp dir)')
    parser.add_argument('--save-model', action='store_true', default=True,
                        help='For Saving the current Model')
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()

    torch.manual_seed(args.seed)

    device = torch.device("cuda" if use_cuda else "cpu")

    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_cuda:
        cuda_kwargs = {'num_workers': 1,
                       'pin_memory': True}
        train_kwargs.update(cuda_kwargs)
        test_kwargs.update(cuda_kwargs)

    dataset1 = make_fake_mnist(args.num_train, seed=args.seed)
    dataset2 = make_fake_mnist(256, seed=args.seed + 1000)
    # an explicit generator keeps the shuffle order independent of any other RNG use
    train_loader = DataLoader(dataset1, shuffle=True,
                              generator=torch.Generator().manual_seed(args.seed),
                              **train_kwargs)
    test_loader = DataLoader(dataset2, shuffle=False, **test_kwargs)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    if args.steps is not None:
        args.epochs = max(args.epochs, math.ceil(args.steps / len(train_loader)))

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    global_step = 0
    for epoch in range(1, args.epochs + 1):
        global_step = train(args, model, device, train_loader, optimizer, epoch, global_step)
        test(model, device, test_loader)
        scheduler.step()

    if args.save_model:
        out_dir = args.out_dir or tempfile.mkdtemp(prefix="mnist_mlp_")
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "mnist_cnn.pt")
        torch.save(model.state_dict(), path)
        # reload onto whatever device we trained on and check it still evaluates the same
        reloaded = Net().to(device)
        reloaded.load_state_dict(torch.load(path, map_location=device))
        print("reloaded checkpoint from {}".format(path))
        test(reloaded, device, test_loader)


if __name__ == '__main__':
    main()
