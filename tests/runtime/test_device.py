"""The npu device itself: tensors, aliasing, errors, serialization, memory."""

from __future__ import annotations

import copy
import io

import pytest
import torch


def test_factories_moves_and_identity(npu):
    a = torch.zeros(2, 3, device="npu")
    b = torch.arange(6.0).npu()
    c = torch.ones(2, 3).to("npu:0")
    for t in (a, b, c):
        assert t.is_npu and t.device == npu and type(t) is torch.Tensor
    assert torch.full((2,), 7, device=npu).cpu().tolist() == [7, 7]
    assert b.cpu().numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert (b * 2).sum().item() == 30.0
    assert "device='npu:0'" in repr(b)


def test_view_writes_are_seen_by_base_and_strides_match_cpu():
    host = torch.arange(12.0).reshape(3, 4)
    base = host.npu()
    view = base.t()[1:, ::2]
    assert view.stride() == host.t()[1:, ::2].stride()
    assert view.storage_offset() == host.t()[1:, ::2].storage_offset()
    view.mul_(-1)
    host.t()[1:, ::2].mul_(-1)
    assert torch.equal(base.cpu(), host)
    base[0].fill_(5)
    assert view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert torch.equal(base.cpu()[0], torch.full((4,), 5.0))


def test_mixed_device_error_like_a_real_accelerator():
    with pytest.raises(
        RuntimeError,
        match=r"Expected all tensors to be on the same device, but found at least two devices, npu:0 and cpu!",
    ):
        torch.ones(3, device="npu") + torch.ones(3)
    with pytest.raises(RuntimeError, match="same device"):
        torch.mm(torch.ones(2, 2, device="npu"), torch.ones(2, 2))
    # A zero-dim CPU tensor is a scalar, as on CUDA.
    assert (torch.ones(3, device="npu") + torch.tensor(1.0)).device.type == "npu"


def test_autograd_parameters_and_state_dict_round_trip(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    ref = copy.deepcopy(model)
    model.npu()
    assert all(p.is_npu and isinstance(p, torch.nn.Parameter) for p in model.parameters())
    model(torch.ones(3, 4, device="npu")).sum().backward()
    assert model.weight.grad.is_npu
    path = tmp_path / "ckpt.pt"
    torch.save(model.state_dict(), path)
    loaded = torch.load(path, map_location="npu:0")
    assert all(v.device.type == "npu" for v in loaded.values())
    on_cpu = torch.load(path, map_location="cpu")
    assert torch.equal(on_cpu["weight"], ref.weight.detach())
    ref.load_state_dict(on_cpu)
    # CPU checkpoint straight to npu, and npu tensors pickled without map_location
    buf = io.BytesIO()
    torch.save({"w": ref.weight.detach()}, buf)
    buf.seek(0)
    assert torch.load(buf, map_location="npu:0")["w"].is_npu
    buf = io.BytesIO()
    torch.save(model.weight.detach(), buf)
    buf.seek(0)
    assert torch.load(buf).is_npu
    clone = copy.deepcopy(model)
    assert clone.weight.is_npu and torch.equal(clone.weight.cpu(), model.weight.cpu())
    clone.weight.data.zero_()
    assert not torch.equal(clone.weight.cpu(), model.weight.cpu())


def test_memory_accounting_counts_live_storages():
    before = torch.npu.memory_allocated()
    t = torch.empty(1024, dtype=torch.float32, device="npu")
    assert torch.npu.memory_allocated() == before + 4096
    view = t[10:20]
    assert torch.npu.memory_allocated() == before + 4096  # views share the storage
    del t
    assert torch.npu.memory_allocated() == before + 4096  # the view keeps it alive
    del view
    assert torch.npu.memory_allocated() == before
    assert torch.npu.max_memory_allocated() >= before + 4096
    assert torch.npu.memory_reserved() >= torch.npu.memory_allocated()
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved() == torch.npu.memory_allocated()
    torch.npu.reset_peak_memory_stats()
    assert torch.npu.max_memory_allocated() == torch.npu.memory_allocated()
    free, total = torch.npu.mem_get_info()
    assert total == 64 * 1024**3 and free <= total


def test_out_of_memory_like_the_real_one():
    with pytest.raises(torch.OutOfMemoryError, match=r"NPU out of memory. Tried to allocate 128.00 GiB"):
        torch.empty(32 * 1024**3, dtype=torch.float32, device="npu")
    torch.npu.set_per_process_memory_fraction(0.5)
    try:
        with pytest.raises(torch.OutOfMemoryError):
            torch.empty(9 * 1024**3, dtype=torch.float32, device="npu")  # 36 GiB > 32 GiB
    finally:
        torch.npu.set_per_process_memory_fraction(1.0)


def test_out_argument_resize_and_inplace_metadata_ops():
    out = torch.empty(0, device="npu")
    torch.add(torch.ones(5, device="npu"), 1, out=out)
    assert out.shape == (5,) and out.cpu().tolist() == [2.0] * 5
    t = torch.arange(4.0, device="npu")
    t.unsqueeze_(0)
    assert t.shape == (1, 4)
    t.resize_(2, 3)
    assert t.shape == (2, 3) and t.cpu().flatten()[:4].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_grad_scaler_unscale_inf_check_step_update():
    model = torch.nn.Linear(3, 1).npu()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.npu.amp.GradScaler(init_scale=8.0, growth_interval=1)
    before = model.weight.detach().cpu().clone()
    scaler.scale(model(torch.ones(2, 3, device="npu")).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 16.0  # finite grads: grows after growth_interval steps
    assert not torch.equal(model.weight.detach().cpu(), before)
    after_good = model.weight.detach().cpu().clone()
    opt.zero_grad()
    scaler.scale(model(torch.full((2, 3), float("inf"), device="npu")).sum()).backward()
    scaler.step(opt)  # inf grads: the step is skipped
    scaler.update()
    assert scaler.get_scale() == 8.0
    assert torch.equal(model.weight.detach().cpu(), after_good)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autocast_matches_cpu_autocast(dtype):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(144, 5)
    )
    twin = copy.deepcopy(model).npu()
    x = torch.randn(2, 3, 8, 8)
    with torch.autocast("cpu", dtype=dtype):
        ref = model(x)
        ref_loss = ref.float().pow(2).mean()
    with torch.npu.amp.autocast(dtype=dtype):
        out = twin(x.npu())
        loss = out.float().pow(2).mean()
    assert out.dtype == ref.dtype == dtype
    assert torch.equal(out.cpu(), ref)
    ref_loss.backward()
    loss.backward()
    for a, b in zip(model.parameters(), twin.parameters()):
        assert torch.equal(a.grad, b.grad.cpu())


def test_a_bare_npu_means_the_current_device_for_to_as_for_factories():
    torch.npu.set_device(1)
    try:
        model = torch.nn.Linear(2, 2).to("npu")
        assert next(model.parameters()).device == torch.device("npu", 1)
        assert torch.zeros(2).to("npu").device == torch.device("npu", 1)
        assert torch.zeros(2).to(torch.device("npu")).device == torch.device("npu", 1)
        assert torch.zeros(2).to(device="npu", dtype=torch.float64).device == torch.device("npu", 1)
        assert torch.zeros(2, device="npu").device == torch.device("npu", 1)
        assert torch.zeros(2).to("npu:0").device == torch.device("npu", 0)  # an explicit index wins
    finally:
        torch.npu.set_device(0)
    assert torch.zeros(2).to("npu").device == torch.device("npu", 0)
