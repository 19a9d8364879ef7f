"""An ``hccl`` process-group backend for the simulated npu, implemented over gloo.

npu tensors are views of host memory, so each collective hands gloo CPU views
of the very same bytes: gloo reduces in place and the npu tensors see the
result with no copy. CPU tensors pass straight through. Works with
``init_process_group(backend="hccl")``, ``new_group(backend="hccl")`` and DDP.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup as _C10dProcessGroup

from runtime_shim.device import DEVICE_TYPE, host_view

BACKEND_NAME = "hccl"


def _host(value: Any) -> Any:
    """npu tensors (also nested in lists) -> CPU views of the same memory."""
    if isinstance(value, torch.Tensor):
        return host_view(value) if value.device.type == DEVICE_TYPE else value
    if isinstance(value, (list, tuple)):
        return [_host(v) for v in value]
    return value


class ProcessGroupHCCL(_C10dProcessGroup):
    """The ``hccl`` backend: gloo collectives on host views of npu tensors."""

    def __init__(self, store, rank: int, size: int, timeout: timedelta) -> None:
        super().__init__(rank, size)
        # A private key prefix keeps the inner gloo rendezvous apart from any
        # other group built on the same store.
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("runtime_shim_hccl", store), rank, size, timeout)

    def getBackendName(self) -> str:
        return BACKEND_NAME

    def _get_backend_name(self) -> str:
        return BACKEND_NAME

    def allreduce(self, tensors, opts=None):
        """All-reduce in place."""
        return self._gloo.allreduce(_host(tensors), opts or dist.AllreduceOptions())

    def allreduce_coalesced(self, tensors, opts=None):
        """All-reduce a list of tensors as one."""
        return self._gloo.allreduce_coalesced(_host(tensors), opts or dist.AllreduceCoalescedOptions())

    def broadcast(self, tensors, opts=None):
        """Broadcast in place from ``opts.rootRank``."""
        return self._gloo.broadcast(_host(tensors), opts or dist.BroadcastOptions())

    def reduce(self, tensors, opts=None):
        """Reduce to ``opts.rootRank``."""
        return self._gloo.reduce(_host(tensors), opts or dist.ReduceOptions())

    def allgather(self, output_tensors, input_tensors, opts=None):
        """Gather every rank's input into each rank's output list."""
        return self._gloo.allgather(
            _host(output_tensors), _host(input_tensors), opts or dist.AllgatherOptions()
        )

    def _allgather_base(self, output, input, opts=None):
        """All-gather into one flat output tensor."""
        return self._gloo._allgather_base(_host(output), _host(input), opts or dist.AllgatherOptions())

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """All-gather several tensors at once."""
        return self._gloo.allgather_coalesced(
            _host(output_lists), _host(input_list), opts or dist.AllgatherOptions()
        )

    def gather(self, output_tensors, input_tensors, opts=None):
        """Gather to ``opts.rootRank``."""
        return self._gloo.gather(_host(output_tensors), _host(input_tensors), opts or dist.GatherOptions())

    def scatter(self, output_tensors, input_tensors, opts=None):
        """Scatter from ``opts.rootRank``."""
        return self._gloo.scatter(_host(output_tensors), _host(input_tensors), opts or dist.ScatterOptions())

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        """Reduce, then scatter the result."""
        return self._gloo.reduce_scatter(
            _host(output_tensors), _host(input_tensors), opts or dist.ReduceScatterOptions()
        )

    def _reduce_scatter_base(self, output, input, opts=None):
        """Reduce-scatter on flat tensors."""
        return self._gloo._reduce_scatter_base(
            _host(output), _host(input), opts or dist.ReduceScatterOptions()
        )

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        """All-to-all on flat tensors."""
        return self._gloo.alltoall_base(
            _host(output), _host(input), output_split_sizes, input_split_sizes, opts or dist.AllToAllOptions()
        )

    def send(self, tensors, dst_rank: int, tag: int):
        """Point-to-point send."""
        return self._gloo.send(_host(tensors), dst_rank, tag)

    def recv(self, tensors, src_rank: int, tag: int):
        """Point-to-point receive."""
        return self._gloo.recv(_host(tensors), src_rank, tag)

    def recv_anysource(self, tensors, tag: int):
        """Receive from any rank."""
        return self._gloo.recv_anysource(_host(tensors), tag)

    def barrier(self, opts=None):
        """Block until every rank arrives."""
        return self._gloo.barrier(opts or dist.BarrierOptions())


def _create(store, rank: int, size: int, timeout: timedelta) -> ProcessGroupHCCL:
    return ProcessGroupHCCL(store, rank, size, timeout)


def register() -> None:
    """Make ``backend="hccl"`` available (for the npu device) in torch.distributed."""
    if BACKEND_NAME in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create, devices=[DEVICE_TYPE])
