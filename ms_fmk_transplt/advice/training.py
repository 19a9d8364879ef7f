"""Training-loop and setting patterns that slow an NPU down: optimizers with a fused NPU form,
DataLoader and DDP settings, anomaly detection left on, float64, and host synchronisation
(`.item()`, `.cpu()`) on every step."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ms_fmk_transplt.advice.walk import Hit, Walked, argument, has_star_kwargs, method_name
from ms_fmk_transplt.engine.reporting import on_host

_OPTIMIZERS = {f"torch.optim.{name}" for name in ("AdamW", "Adam", "SGD", "RMSprop", "Adadelta")}
_LOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
_DDP = {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}
_FLOAT64 = {"torch.float64", "torch.double"}
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory)
_NUM_WORKERS, _PIN_MEMORY = 5, 7
# DistributedDataParallel(module, device_ids, output_device, dim, broadcast_buffers, process_group, bucket_cap_mb)
_BUCKET_CAP_MB = 6


def _is_name(node: cst.BaseExpression | None, value: str) -> bool:
    return isinstance(node, cst.Name) and node.value == value


def optimizers(walked: Walked) -> Iterator[Hit]:
    """A PyTorch optimizer torch_npu has a fused form of, constructed."""
    for site in walked.calls:
        assert isinstance(site.node, cst.Call)
        api = walked.qualified(site.node.func)
        if api in _OPTIMIZERS:
            yield "optimizer", site.node, api


def loaders(walked: Walked) -> Iterator[Hit]:
    """A DataLoader with pin_memory left False, or num_workers left 0 (given as literals or not at
    all; a value computed at run time is the user's choice, not advised on)."""
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        api = walked.qualified(call.func)
        if api not in _LOADERS or has_star_kwargs(call):
            continue
        pin = argument(call, _PIN_MEMORY, "pin_memory")
        if pin is None or _is_name(pin, "False"):
            yield "loader_pin_memory", call, api
        workers = argument(call, _NUM_WORKERS, "num_workers")
        if workers is None or (isinstance(workers, cst.Integer) and workers.value == "0"):
            yield "loader_workers", call, api


def ddp(walked: Walked) -> Iterator[Hit]:
    """DistributedDataParallel without bucket_cap_mb."""
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        api = walked.qualified(call.func)
        if (
            api in _DDP
            and not has_star_kwargs(call)
            and argument(call, _BUCKET_CAP_MB, "bucket_cap_mb") is None
        ):
            yield "ddp_bucket", call, api


def anomaly(walked: Walked) -> Iterator[Hit]:
    """`torch.autograd.set_detect_anomaly(True)` and `torch.autograd.detect_anomaly()`."""
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        api = walked.qualified(call.func)
        if api in ("torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly"):
            if _is_name(argument(call, 0, "mode"), "True"):
                yield "anomaly", call, "torch.autograd.set_detect_anomaly"
        elif api in ("torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly"):
            yield "anomaly", call, "torch.autograd.detect_anomaly"


def float64(walked: Walked) -> Iterator[Hit]:
    """`torch.float64` / `torch.double` named outside type hints, and `x.double()`; not where the
    float64 work is evidently the host's (`x.cpu().double()`, `x.double().cpu()`, `.numpy()`,
    `device="cpu"`): metrics kept in float64 on the CPU cost the NPU nothing."""
    host = _host_side(walked)
    for site in walked.attributes:
        if walked.qualified(site.node) in _FLOAT64 and id(site.node) not in host:
            yield "float64", site.node, "torch.float64"
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        double = method_name(call) == "double" and not call.args and walked.qualified(call.func) is None
        if double and id(call) not in host:
            yield "float64", call, "torch.Tensor.double"


_TO_HOST = frozenset({"cpu", "numpy", "tolist", "item"})
_CASTS = frozenset({"double", "to", "type"})


def _host_side(walked: Walked) -> set[int]:
    """Ids of the casts (and the dtypes named in them) whose float64 values live on the host: cast
    on a tensor already moved there, moved there straight after, or made with `device="cpu"`."""
    found: set[int] = set()
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        func = call.func
        casts: list[cst.Call] = []
        name = method_name(call)
        inner = func.value if isinstance(func, cst.Attribute) else None
        if name in _TO_HOST and isinstance(inner, cst.Call) and method_name(inner) in _CASTS:
            casts.append(inner)  # x.double().cpu(): one cast, then the host's work
        if name in _CASTS and isinstance(func, cst.Attribute) and on_host(func.value):
            casts.append(call)  # x.cpu().double()
        device = argument(call, -1, "device")
        if isinstance(device, cst.SimpleString) and device.evaluated_value == "cpu":
            casts.append(call)  # torch.zeros(n, dtype=torch.float64, device="cpu")
        for cast in casts:
            found.add(id(cast))
            found.update(id(arg.value) for arg in cast.args)
    return found


def host_sync(walked: Walked) -> Iterator[Hit]:
    """`.item()` / `.cpu()` run on every step: in a loop that calls backward() or step(), with no
    `if` between the loop and the call (a logging interval reads it only now and then)."""
    for site in walked.calls:
        call = site.node
        assert isinstance(call, cst.Call)
        name = method_name(call)
        if name not in ("item", "cpu") or call.args or walked.qualified(call.func) is not None:
            continue
        for block in reversed(site.blocks):
            if isinstance(block, (cst.If, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                break
            if isinstance(block, (cst.For, cst.While)) and id(block) in walked.training_loops:
                yield f"host_sync_{name}", call, f"torch.Tensor.{name}"
                break


DETECTORS = (optimizers, loaders, ddp, anomaly, float64, host_sync)
