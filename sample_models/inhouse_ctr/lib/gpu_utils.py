"""GPU helpers shared by our trainers.

Everything here degrades gracefully when CUDA is missing (laptops, CI boxes).
"""
import logging

import torch
import torch.cuda as tc
from torch import cuda

logger = logging.getLogger(__name__)


def select_device(use_cuda, gpu_id=0):
    """Return (device, use_cuda). `use_cuda` is the user's wish; we check the GPU is really there."""
    use_cuda = bool(use_cuda) and tc.is_available()
    if not use_cuda:
        return torch.device("cpu"), False
    if gpu_id >= cuda.device_count():
        logger.warning("gpu_id %d out of range, using GPU 0", gpu_id)
        gpu_id = 0
    tc.set_device(gpu_id)
    return torch.device("cuda:%d" % gpu_id), True


def describe_devices(use_cuda):
    if not use_cuda:
        return "no GPU: running on CPU"
    idx = torch.cuda.current_device()
    return "CUDA device %d/%d: %s" % (idx, cuda.device_count(), torch.cuda.get_device_name(idx))


class DataPrefetcher(object):
    """Overlaps host->GPU copies with compute using a side CUDA stream (NVIDIA apex style).

    On CPU it is a plain iterator over the loader.
    """

    def __init__(self, loader, device, use_cuda):
        self.loader = iter(loader)
        self.device = device
        self.use_cuda = use_cuda
        self.stream = tc.Stream() if use_cuda else None
        self.preload()

    def preload(self):
        try:
            self.next_x, self.next_y = next(self.loader)
        except StopIteration:
            self.next_x = self.next_y = None
            return
        if self.use_cuda:
            with tc.stream(self.stream):
                self.next_x = self.next_x.cuda(non_blocking=True)
                self.next_y = self.next_y.cuda(non_blocking=True)

    def __iter__(self):
        return self

    def __next__(self):
        if self.use_cuda:
            tc.current_stream().wait_stream(self.stream)
        x, y = self.next_x, self.next_y
        if x is None:
            raise StopIteration
        if self.use_cuda:
            # tell the caching allocator these tensors are now used on the compute stream
            x.record_stream(tc.current_stream())
            y.record_stream(tc.current_stream())
        self.preload()
        return x, y
