"""torch_npu's additions to PyTorch that converted scripts use, on the simulated device."""

from __future__ import annotations

import io

import pytest
import torch
import torch.distributed as dist


def test_storage_npu_in_map_location(npu) -> None:
    state = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "step": torch.tensor(7)}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, map_location=lambda storage, loc: storage.npu(0))
    assert loaded["w"].device == npu and loaded["step"].device == npu
    assert torch.equal(loaded["w"].cpu(), state["w"]) and loaded["step"].item() == 7


def test_storage_npu_picks_the_device() -> None:
    storage = torch.ones(4).untyped_storage()
    moved = storage.npu(1)
    assert moved.device == torch.device("npu", 1)
    assert moved.npu(1) is moved
    with pytest.warns(UserWarning):  # TypedStorage is deprecated, but old checkpoints code uses it
        assert torch.ones(2).storage().npu().device.type == "npu"


def test_profile_accepts_use_npu(npu) -> None:
    with torch.autograd.profiler.profile(use_npu=True) as prof:
        (torch.ones(8, device=npu) * 2).sum()
    assert prof.use_npu is True
    assert any("mul" in e.name for e in prof.function_events)


def test_torch_npu_profiler_records_host_activity(npu) -> None:
    import torch_npu

    acts = [torch_npu.profiler.ProfilerActivity.CPU, torch_npu.profiler.ProfilerActivity.NPU]
    with torch_npu.profiler.profile(
        activities=acts,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1),
        experimental_config=None,
    ) as prof:
        torch.ones(4, device=npu).add_(1)
        prof.step()
    assert prof.events() is not None


def test_fused_optimizers_compute_like_torch_optim(npu) -> None:
    import torch_npu

    torch.manual_seed(0)
    a = torch.nn.Linear(4, 2).to(npu)
    b = torch.nn.Linear(4, 2).to(npu)
    b.load_state_dict(a.state_dict())
    x = torch.randn(8, 4, device=npu)
    fused = torch_npu.optim.NpuFusedAdamW(a.parameters(), lr=0.1)
    plain = torch.optim.AdamW(b.parameters(), lr=0.1)
    for model, opt in ((a, fused), (b, plain)):
        model(x).square().mean().backward()
        opt.step()
    assert torch.equal(a.weight.cpu(), b.weight.cpu())


def test_hccl_names() -> None:
    assert dist.is_hccl_available()
    assert dist.Backend.HCCL == "hccl"


def test_integer_device_index_means_npu(npu) -> None:
    """A bare index names the registered PrivateUse1 device, so `.to(rank)` stays unconverted."""
    assert torch.zeros(1).to(0).device == npu
    assert torch.device(0) == npu
    assert torch.zeros(2, device=0).device == npu


def test_record_stream_with_npu_stream(npu) -> None:
    side = torch.npu.Stream()
    x = torch.ones(3, device=npu)
    with torch.npu.stream(side):
        y = x * 2
    y.record_stream(torch.npu.current_stream())
    assert y.cpu().tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize(
    "kwargs",
    [dict(is_causal=True), dict(), dict(mask="bool"), dict(mask="float"), dict(is_causal=True, scale=0.3)],
)
def test_sdpa_matches_cpu_bit_for_bit(npu, kwargs) -> None:
    import torch.nn.functional as F

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 8, 16, requires_grad=True) for _ in range(3))
    mask = kwargs.pop("mask", None)
    m = None if mask is None else (torch.rand(8, 8) > 0.3 if mask == "bool" else torch.randn(8, 8))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kwargs)
    out.square().sum().backward()
    qn, kn, vn = (t.detach().to(npu).requires_grad_() for t in (q, k, v))
    on = F.scaled_dot_product_attention(qn, kn, vn, attn_mask=None if m is None else m.to(npu), **kwargs)
    on.square().sum().backward()
    assert torch.equal(out, on.cpu())
    for a, b in ((q, qn), (k, kn), (v, vn)):
        assert torch.equal(a.grad, b.grad.cpu())


class _Tied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(11, 4)
        self.head = torch.nn.Linear(4, 11, bias=False)
        self.emb.weight = self.head.weight  # weight tying, as in GPT-2 / nanoGPT


@pytest.mark.parametrize("move", ["to", "npu", "cpu_roundtrip"])
def test_tied_parameters_stay_tied(npu, move) -> None:
    model = _Tied()
    if move == "to":
        model.to(npu)
    elif move == "npu":
        model.npu()
    else:
        model.npu().cpu()
    assert model.emb.weight is model.head.weight
    assert len(list(model.parameters())) == 1


def test_tied_model_trains_like_cpu(npu) -> None:
    torch.manual_seed(0)
    cpu = _Tied()
    dev = _Tied()
    dev.load_state_dict(cpu.state_dict())
    dev.to(npu)
    idx = torch.randint(0, 11, (3, 5))
    for model, x in ((cpu, idx), (dev, idx.to(npu))):
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        for _ in range(3):
            opt.zero_grad()
            model.head(model.emb(x)).logsumexp(-1).mean().backward()
            opt.step()
    assert torch.equal(cpu.head.weight, dev.head.weight.cpu())


def test_tensor_type_with_npu_typed_tensors(npu) -> None:
    x = torch.tensor([1, 0, 1])
    y = x.type(torch.npu.FloatTensor)
    assert y.device == npu and y.dtype == torch.float32
    z = y.type("torch.npu.LongTensor")
    assert z.device == npu and z.dtype == torch.int64
    assert x.type(torch.FloatTensor).device.type == "cpu"
    assert isinstance(y, torch.npu.FloatTensor)


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_dropout_matches_cpu_bit_for_bit(npu, p) -> None:
    import torch.nn.functional as F

    x = torch.randn(64, 32, requires_grad=True)
    xn = x.detach().to(npu).requires_grad_()
    torch.manual_seed(5)
    a = F.dropout(x, p, training=True)
    a.square().sum().backward()
    torch.manual_seed(5)
    b = F.dropout(xn, p, training=True)
    b.square().sum().backward()
    assert torch.equal(a, b.cpu()) and torch.equal(x.grad, xn.grad.cpu())
    assert torch.equal(F.dropout(xn, p, training=False).cpu(), x.detach())
