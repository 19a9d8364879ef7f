# Sample model: pytorch/examples "imagenet"-style trainer with a tiny ResNet (BatchNorm, dropout) on synthetic images.
# Exercises: cudnn.benchmark/deterministic, torch.cuda.set_device(args.gpu), model.cuda(args.gpu),
#   x.cuda(args.gpu, non_blocking=True), torch.cuda.Event(enable_timing=True), torch.cuda.synchronize(),
#   torch.cuda.reset_peak_memory_stats()/max_memory_allocated(), checkpoint resume with
#   map_location='cuda:{gpu}' and map_location=lambda storage, loc: storage.cuda(args.gpu).
import argparse
import math
import os
import random
import shutil
import tempfile
import time
import warnings

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torch.optim
import torch.utils.data
from torch.optim.lr_scheduler import StepLR

best_acc1 = 0


# ---------------------------------------------------------------------------- model
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes),
            )

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class TinyResNet(nn.Module):
    def __init__(self, widths=(16, 32, 64), num_classes=10, drop=0.2):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 3, padding=1, bias=False),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(inplace=True),
        )
        layers, inplanes = [], widths[0]
        for i, w in enumerate(widths):
            layers.append(BasicBlock(inplanes, w, stride=1 if i == 0 else 2))
            inplanes = w
        self.layers = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=drop)
        self.fc = nn.Linear(inplanes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.layers(self.stem(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(self.dropout(x))


model_names = {"resnet_tiny": TinyResNet}


# ---------------------------------------------------------------------------- data
class SyntheticImageNet(torch.utils.data.Dataset):
    """Fake 'ImageFolder': class k has a coloured stripe at row k. Generated once, deterministic."""

    def __init__(self, n, num_classes=10, size=16, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.targets = torch.randint(0, num_classes, (n,), generator=g)
        self.images = torch.randn(n, 3, size, size, generator=g)
        for k in range(num_classes):
            idx = self.targets == k
            self.images[idx, k % 3, k % size, :] += 2.0

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return self.images[i], self.targets[i]


# ---------------------------------------------------------------------------- args
parser = argparse.ArgumentParser(description='PyTorch ImageNet-style Training (synthetic data)')
parser.add_argument('-a', '--arch', metavar='ARCH', default='resnet_tiny',
                    choices=sorted(model_names), help='model architecture (default: resnet_tiny)')
parser.add_argument('-j', '--workers', default=0, type=int, metavar='N',
                    help='number of data loading workers (default: 0)')
parser.add_argument('--epochs', default=2, type=int, metavar='N',
                    help='number of total epochs to run')
parser.add_argument('--steps', default=None, type=int, metavar='N',
                    help='stop after this many training iterations in total')
parser.add_argument('--start-epoch', default=0, type=int, metavar='N',
                    help='manual epoch number (useful on restarts)')
parser.add_argument('-b', '--batch-size', default=32, type=int, metavar='N')
parser.add_argument('--lr', '--learning-rate', default=0.05, type=float, metavar='LR', dest='lr')
parser.add_argument('--momentum', default=0.9, type=float, metavar='M')
parser.add_argument('--wd', '--weight-decay', default=1e-4, type=float, metavar='W', dest='weight_decay')
parser.add_argument('-p', '--print-freq', default=5, type=int, metavar='N')
parser.add_argument('--resume', default='', type=str, metavar='PATH',
                    help='path to latest checkpoint (default: none)')
parser.add_argument('-e', '--evaluate', dest='evaluate', action='store_true',
                    help='evaluate model on validation set')
parser.add_argument('--seed', default=0, type=int, help='seed for initializing training. ')
parser.add_argument('--gpu', default=0, type=int,
                    help='GPU id to use (ignored when CUDA is not available).')
parser.add_argument('--num-train', default=320, type=int)
parser.add_argument('--num-val', default=128, type=int)
parser.add_argument('--out-dir', default=None, type=str,
                    help='directory for checkpoint.pth.tar / model_best.pth.tar (default: temp dir)')


def main():
    args = parser.parse_args()

    if args.seed is not None:
        random.seed(args.seed)
        torch.manual_seed(args.seed)
        cudnn.deterministic = True
        cudnn.benchmark = False
        warnings.warn('You have chosen to seed training. '
                      'This will turn on the CUDNN deterministic setting, '
                      'which can slow down your training considerably! '
                      'You may see unexpected behavior when restarting '
                      'from checkpoints.')

    if not torch.cuda.is_available():
        args.gpu = None
    if args.gpu is not None:
        warnings.warn('You have chosen a specific GPU. This will completely '
                      'disable data parallelism.')
    if args.out_dir is None:
        args.out_dir = tempfile.mkdtemp(prefix="imagenet_resnet_")
    os.makedirs(args.out_dir, exist_ok=True)

    main_worker(args.gpu, args)


def main_worker(gpu, args):
    global best_acc1
    args.gpu = gpu

    if args.gpu is not None:
        print("Use GPU: {} for training".format(args.gpu))

    print("=> creating model '{}'".format(args.arch))
    model = model_names[args.arch]()

    if not torch.cuda.is_available():
        print('using CPU, this will be slow')
        device = torch.device("cpu")
    elif args.gpu is not None:
        torch.cuda.set_device(args.gpu)
        model = model.cuda(args.gpu)
        device = torch.device('cuda:{}'.format(args.gpu))
    else:
        model = model.cuda()
        device = torch.device("cuda")

    # define loss function (criterion), optimizer, and learning rate scheduler
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr,
                                momentum=args.momentum,
                                weight_decay=args.weight_decay)
    scheduler = StepLR(optimizer, step_size=30, gamma=0.1)

    # optionally resume from a checkpoint
    if args.resume:
        if os.path.isfile(args.resume):
            print("=> loading checkpoint '{}'".format(args.resume))
            if args.gpu is None:
                checkpoint = torch.load(args.resume, map_location="cpu")
            elif torch.cuda.is_available():
                # Map model to be loaded to specified single gpu.
                loc = 'cuda:{}'.format(args.gpu)
                checkpoint = torch.load(args.resume, map_location=loc)
            args.start_epoch = checkpoint['epoch']
            best_acc1 = checkpoint['best_acc1']
            if args.gpu is not None:
                # best_acc1 may be from a checkpoint from a different GPU
                best_acc1 = best_acc1.to(args.gpu)
            model.load_state_dict(checkpoint['state_dict'])
            optimizer.load_state_dict(checkpoint['optimizer'])
            scheduler.load_state_dict(checkpoint['scheduler'])
            print("=> loaded checkpoint '{}' (epoch {})"
                  .format(args.resume, checkpoint['epoch']))
        else:
            print("=> no checkpoint found at '{}'".format(args.resume))

    cudnn.benchmark = not cudnn.deterministic  # autotune convs when we do not need repeatability

    train_dataset = SyntheticImageNet(args.num_train, seed=args.seed)
    val_dataset = SyntheticImageNet(args.num_val, seed=args.seed + 1)
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=True,
        num_workers=args.workers, pin_memory=torch.cuda.is_available(), drop_last=True,
        generator=torch.Generator().manual_seed(args.seed))
    val_loader = torch.utils.data.DataLoader(
        val_dataset, batch_size=args.batch_size, shuffle=False,
        num_workers=args.workers, pin_memory=torch.cuda.is_available())

    if args.evaluate:
        validate(val_loader, model, criterion, args)
        return

    if args.steps is not None:
        args.epochs = max(args.epochs, args.start_epoch + math.ceil(args.steps / len(train_loader)))
    args.global_step = 0

    for epoch in range(args.start_epoch, args.epochs):
        # train for one epoch
        train(train_loader, model, criterion, optimizer, epoch, device, args)
        # evaluate on validation set
        acc1 = validate(val_loader, model, criterion, args)
        scheduler.step()

        # remember best acc@1 and save checkpoint
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        save_checkpoint({
            'epoch': epoch + 1,
            'arch': args.arch,
            'state_dict': model.state_dict(),
            'best_acc1': best_acc1,
            'optimizer': optimizer.state_dict(),
            'scheduler': scheduler.state_dict()
        }, is_best, args.out_dir)
        if args.steps is not None and args.global_step >= args.steps:
            break

    # Reload the best weights the way a separate eval job would (storage remapped onto our GPU).
    best_path = os.path.join(args.out_dir, 'model_best.pth.tar')
    if args.gpu is not None:
        checkpoint = torch.load(best_path, map_location=lambda storage, loc: storage.cuda(args.gpu))
    else:
        checkpoint = torch.load(best_path, map_location=lambda storage, loc: storage)
    model.load_state_dict(checkpoint['state_dict'])
    print("=> reloaded best model (epoch {}, acc@1 {:.3f})".format(checkpoint['epoch'],
                                                                   float(checkpoint['best_acc1'])))
    validate(val_loader, model, criterion, args)


def train(train_loader, model, criterion, optimizer, epoch, device, args):
    batch_time = AverageMeter('Time', ':6.3f')
    data_time = AverageMeter('Data', ':6.3f')
    losses = AverageMeter('Loss', ':.4e')
    top1 = AverageMeter('Acc@1', ':6.2f')
    progress = ProgressMeter(len(train_loader), [batch_time, data_time, losses, top1],
                             prefix="Epoch: [{}]".format(epoch))

    # switch to train mode
    model.train()

    use_events = torch.cuda.is_available()
    if use_events:
        torch.cuda.reset_peak_memory_stats()
        start_evt = torch.cuda.Event(enable_timing=True)
        end_evt = torch.cuda.Event(enable_timing=True)
        start_evt.record()
    epoch_start = time.time()

    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        if args.steps is not None and args.global_step >= args.steps:
            break
        # measure data loading time
        data_time.update(time.time() - end)

        # move data to the same device as model
        if args.gpu is not None:
            images = images.cuda(args.gpu, non_blocking=True)
            target = target.cuda(args.gpu, non_blocking=True)
        else:
            images = images.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)

        # compute output
        output = model(images)
        loss = criterion(output, target)

        # measure accuracy and record loss
        acc1, = accuracy(output, target, topk=(1,))
        losses.update(loss.item(), images.size(0))
        top1.update(acc1[0].item(), images.size(0))

        # compute gradient and do SGD step
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        args.global_step += 1
        print(f"step={args.global_step} loss={loss.item()!r}", flush=True)

        # measure elapsed time
        batch_time.update(time.time() - end)
        end = time.time()

        if i % args.print_freq == 0:
            progress.display(i + 1)

    if use_events:
        end_evt.record()
        torch.cuda.synchronize()
        print("epoch {} GPU time {:.1f} ms, peak mem {:.1f} MiB".format(
            epoch, start_evt.elapsed_time(end_evt), torch.cuda.max_memory_allocated() / 2 ** 20))
    else:
        print("epoch {} wall time {:.1f} ms".format(epoch, (time.time() - epoch_start) * 1000))


def validate(val_loader, model, criterion, args):
    top1 = AverageMeter('Acc@1', ':6.2f')
    losses = AverageMeter('Loss', ':.4e')
    model.eval()
    with torch.no_grad():
        for images, target in val_loader:
            if torch.cuda.is_available():
                images = images.cuda(args.gpu, non_blocking=True)
                target = target.cuda(args.gpu, non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            acc1, = accuracy(output, target, topk=(1,))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0].item(), images.size(0))
    print(' * Acc@1 {top1.avg:.3f} Loss {losses.avg:.4f}'.format(top1=top1, losses=losses))
    return torch.tensor(top1.avg)


def save_checkpoint(state, is_best, out_dir, filename='checkpoint.pth.tar'):
    path = os.path.join(out_dir, filename)
    torch.save(state, path)
    if is_best:
        shutil.copyfile(path, os.path.join(out_dir, 'model_best.pth.tar'))


class AverageMeter(object):
    """Computes and stores the average and current value"""

    def __init__(self, name, fmt=':f'):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
        return fmtstr.format(**self.__dict__)


class ProgressMeter(object):
    def __init__(self, num_batches, meters, prefix=""):
        num_digits = len(str(num_batches // 1))
        self.batch_fmtstr = '[{:' + str(num_digits) + 'd}/' + str(num_batches) + ']'
        self.meters = meters
        self.prefix = prefix

    def display(self, batch):
        entries = [self.prefix + self.batch_fmtstr.format(batch)]
        entries += [str(meter) for meter in self.meters]
        print('\t'.join(entries))


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


if __name__ == '__main__':
    main()
