"""Ascend apex on the simulated npu: amp opt levels, loss scaling, checkpoints, fused optimizers."""

from __future__ import annotations

import copy

import apex
import apex.optimizers as fused
import pytest
import torch
from apex import amp
from conftest import ROOT, run_python


def _model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def _batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(step)
    return torch.randn(6, 8, generator=g), torch.randint(0, 4, (6,), generator=g)


def _loss(output: torch.Tensor, target: torch.Tensor, step: int, overflow_at: int | None) -> torch.Tensor:
    loss = torch.nn.functional.cross_entropy(output, target)
    return loss * float("inf") if step == overflow_at else loss


def _autocast_gradscaler_on_cpu(steps: int, overflow_at: int | None = None):
    model = _model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu")
    losses, scales = [], []
    for step in range(steps):
        x, y = _batch(step)
        with torch.autocast("cpu", dtype=torch.float16):
            loss = _loss(model(x), y, step, overflow_at)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
        scales.append(scaler.get_scale())
    return losses, scales, model


def _apex_o1_on_npu(steps: int, overflow_at: int | None = None):
    model = _model().to("npu")
    optimizer = fused.NpuFusedSGD(model.parameters(), lr=0.1, momentum=0.9)
    model, optimizer = amp.initialize(
        model, optimizer, opt_level="O1", loss_scale="dynamic", combine_grad=True
    )
    losses, scales, snapshots = [], [], []
    for step in range(steps):
        x, y = _batch(step)
        loss = _loss(model(x.npu()), y.npu(), step, overflow_at)
        optimizer.zero_grad()
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        optimizer.step()
        losses.append(loss.item())
        scales.append(amp.state_dict()["loss_scaler0"]["loss_scale"])
        snapshots.append([p.detach().cpu().clone() for p in model.parameters()])
    amp.initialize(torch.nn.Linear(1, 1), opt_level="O0")  # switch O1's autocast off again
    return losses, scales, model, snapshots


def test_o1_dynamic_matches_autocast_and_gradscaler_on_cpu_bitwise():
    cpu_losses, cpu_scales, cpu_model = _autocast_gradscaler_on_cpu(4)
    npu_losses, npu_scales, npu_model, _ = _apex_o1_on_npu(4)
    assert npu_losses == cpu_losses
    assert npu_scales == cpu_scales == [2.0**16] * 4
    for a, b in zip(cpu_model.parameters(), npu_model.parameters()):
        assert torch.equal(a, b.cpu())


def test_o1_dynamic_skips_an_overflowing_step_and_halves_the_scale():
    cpu_losses, cpu_scales, cpu_model = _autocast_gradscaler_on_cpu(4, overflow_at=2)
    npu_losses, npu_scales, npu_model, snapshots = _apex_o1_on_npu(4, overflow_at=2)
    assert npu_scales == cpu_scales == [2.0**16, 2.0**16, 2.0**15, 2.0**15]
    assert all(torch.equal(a, b) for a, b in zip(snapshots[1], snapshots[2]))  # the step was skipped
    assert not all(torch.equal(a, b) for a, b in zip(snapshots[2], snapshots[3]))
    assert npu_losses[:2] == cpu_losses[:2] and npu_losses[3] == cpu_losses[3]
    for a, b in zip(cpu_model.parameters(), npu_model.parameters()):
        assert torch.equal(a, b.cpu())


def _guide_flow(model, optimizer, steps, start=0):
    losses = []
    for step in range(start, start + steps):
        x, y = _batch(step)
        loss = torch.nn.functional.cross_entropy(model(x.npu()), y.npu())
        optimizer.zero_grad()
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("optimizer_class", [fused.NpuFusedAdam, fused.NpuFusedSGD])
def test_guide_o2_flow_trains_checkpoints_and_resumes(tmp_path, optimizer_class):
    def fresh():
        model = _model().to("npu")
        optimizer = optimizer_class(model.parameters(), lr=0.01)
        return amp.initialize(model, optimizer, opt_level="O2", loss_scale=128.0, combine_grad=True)

    model, optimizer = fresh()
    assert next(model.parameters()).dtype == torch.float16
    assert all(p.dtype == torch.float32 for p in amp.master_params(optimizer))
    straight = _guide_flow(model, optimizer, 6)
    assert straight[-1] < straight[0]

    model, optimizer = fresh()
    first = _guide_flow(model, optimizer, 3)
    checkpoint = tmp_path / "ckpt.pth"
    torch.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "amp": amp.state_dict()},
        checkpoint,
    )
    model, optimizer = fresh()
    saved = torch.load(checkpoint)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    amp.load_state_dict(saved["amp"])
    # O2's master weights are float32 copies of the float16 model: re-derive them after loading.
    with torch.no_grad():
        for master, param in zip(amp.master_params(optimizer), model.parameters()):
            master.copy_(param.float())
    resumed = _guide_flow(model, optimizer, 3, start=3)
    assert saved["amp"] == {"loss_scaler0": {"loss_scale": 128.0, "unskipped": 3}}
    assert first == straight[:3]
    assert len(resumed) == 3 and all(abs(a - b) < 5e-3 for a, b in zip(resumed, straight[3:]))


def test_static_scale_never_skips_and_o0_keeps_float32():
    model = _model().to("npu")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = amp.initialize(model, optimizer, opt_level="O0")
    assert amp.state_dict() == {"loss_scaler0": {"loss_scale": 1.0, "unskipped": 0}}
    reference = copy.deepcopy(model).cpu()
    x, y = _batch(0)
    loss = torch.nn.functional.cross_entropy(model(x.npu()), y.npu())
    with amp.scale_loss(loss, optimizer) as scaled_loss:
        assert scaled_loss.item() == loss.item()
        scaled_loss.backward()
    optimizer.step()
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    torch.nn.functional.cross_entropy(reference(x), y).backward()
    ref_optimizer.step()
    for a, b in zip(reference.parameters(), model.parameters()):
        assert b.dtype == torch.float32 and torch.equal(a, b.cpu())


def test_bad_arguments_are_named():
    model = _model()
    with pytest.raises(ValueError, match="opt_level='O4' is not one of O0, O1, O2, O3"):
        amp.initialize(model, opt_level="O4")
    with pytest.raises(ValueError, match="loss_scale must be a number or 'dynamic'"):
        amp.initialize(model, opt_level="O2", loss_scale="auto")
    amp.initialize(model, opt_level="O0")
    with pytest.raises(KeyError, match="no 'loss_scaler0' in the checkpoint"):
        amp.load_state_dict({"scaler": {}})
    with pytest.raises(AttributeError, match=r"^apex\.parallel is not simulated by runtime_shim$"):
        apex.parallel  # noqa: B018


def test_an_unsimulated_fused_optimizer_takes_the_scripts_fallback():
    # the form apex-using scripts probe with: the fallback runs instead of a crash
    try:
        from apex.optimizers import FusedNovoGrad  # type: ignore[attr-defined]
    except ImportError:
        FusedNovoGrad = None
    assert FusedNovoGrad is None
    with pytest.raises(
        AttributeError, match=r"^apex\.optimizers\.FusedLAMB is not simulated by runtime_shim$"
    ):
        apex.optimizers.FusedLAMB  # noqa: B018
    assert getattr(apex.amp, "half_function", None) is None
    # must not change: the simulated optimizers still import
    from apex.optimizers import NpuFusedAdam

    assert NpuFusedAdam is fused.NpuFusedAdam


_TORCH_PAIRS = [
    (fused.NpuFusedSGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4}),
    (fused.NpuFusedAdam, torch.optim.Adam, {"lr": 0.01}),
    (fused.NpuFusedAdamW, torch.optim.AdamW, {"lr": 0.01, "weight_decay": 0.05}),
    (fused.NpuFusedAdadelta, torch.optim.Adadelta, {"lr": 1.0}),
    (fused.NpuFusedRMSprop, torch.optim.RMSprop, {"lr": 0.01}),
]


def _three_steps(optimizer_class, kwargs, device):
    model = _model(3).to(device)
    optimizer = optimizer_class(model.parameters(), **kwargs)
    for step in range(3):
        x, y = _batch(step)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
        optimizer.step()
    return [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize(
    ("fused_class", "torch_class", "kwargs"), _TORCH_PAIRS, ids=lambda v: getattr(v, "__name__", "")
)
def test_fused_step_equals_torch_step_bitwise(fused_class, torch_class, kwargs):
    expected = _three_steps(torch_class, kwargs, "cpu")
    for a, b in zip(expected, _three_steps(fused_class, kwargs, "npu")):
        assert torch.equal(a, b)


def test_apex_and_torch_npu_share_the_fused_optimizers():
    import torch_npu

    for name in fused.__all__:
        assert getattr(fused, name) is getattr(torch_npu.optim, name)
    with pytest.raises(NotImplementedError, match=r"use_global_grad_norm=True\) is not simulated"):
        fused.NpuFusedLamb(_model().parameters(), use_global_grad_norm=True)


def test_fused_lamb_npu_equals_cpu_and_moves_against_the_gradient():
    kwargs = {"lr": 0.01, "weight_decay": 0.01}
    before = [p.detach() for p in _model(3).parameters()]
    cpu = _three_steps(fused.NpuFusedLamb, kwargs, "cpu")
    npu = _three_steps(fused.NpuFusedLamb, kwargs, "npu")
    assert all(torch.equal(a, b) for a, b in zip(cpu, npu))
    assert not all(torch.equal(a, b) for a, b in zip(before, npu))
    adam_like = _three_steps(fused.NpuFusedLamb, {**kwargs, "adam": True}, "npu")
    assert not all(torch.equal(a, b) for a, b in zip(adam_like, npu))


@pytest.mark.slow
def test_installed_apex_is_never_shadowed(tmp_path):
    (tmp_path / "apex").mkdir()
    (tmp_path / "apex" / "__init__.py").write_text("REAL = True\n")
    code = "import runtime_shim; runtime_shim.activate(); import apex; print(apex.__runtime_shim__)"
    proc = run_python(
        ["-c", code.replace("__runtime_shim__", "REAL")], env_extra={"PYTHONPATH": f"{tmp_path}:{ROOT}"}
    )
    assert proc.stdout.strip() == "True", proc.stderr
    proc = run_python(["-c", code])
    assert proc.stdout.strip() == "True", proc.stderr


_GUIDE_SCRIPT = """
import sys
import torch
import torch_npu
from apex import amp
import apex.optimizers

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).npu()
optimizer = apex.optimizers.NpuFusedSGD(model.parameters(), lr=0.1, momentum=0.9)
model, optimizer = amp.initialize(model, optimizer, opt_level="O1", loss_scale="dynamic", combine_grad=True)
start = 0
if len(sys.argv) > 2:
    checkpoint = torch.load(sys.argv[2], map_location="npu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    amp.load_state_dict(checkpoint["amp"])
    start = checkpoint["step"]
for step in range(start, int(sys.argv[1])):
    g = torch.Generator().manual_seed(step)
    x, y = torch.randn(6, 8, generator=g).npu(), torch.randint(0, 4, (6,), generator=g).npu()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    with amp.scale_loss(loss, optimizer) as scaled_loss:
        scaled_loss.backward()
    optimizer.step()
    print(f"step={step} loss={loss.item()!r}")
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "amp": amp.state_dict(),
            "step": int(sys.argv[1])}, "ckpt.pth")
"""


@pytest.mark.slow
def test_guide_script_runs_under_runtime_shim_and_resumes_exactly(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(_GUIDE_SCRIPT)
    straight = run_python(["-m", "runtime_shim", str(script), "6"], cwd=tmp_path)
    assert straight.returncode == 0, straight.stderr
    first = run_python(["-m", "runtime_shim", str(script), "3"], cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    resumed = run_python(["-m", "runtime_shim", str(script), "6", "ckpt.pth"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    lines = straight.stdout.splitlines()
    assert len(lines) == 6 and first.stdout.splitlines() + resumed.stdout.splitlines() == lines


@pytest.mark.parametrize(("level", "bn_dtype"), [("O2", torch.float32), ("O3", torch.float16)])
def test_o2_keeps_batchnorm_float32_and_o3_casts_everything(level, bn_dtype):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 3)
    ).to("npu")
    optimizer = fused.NpuFusedSGD(model.parameters(), lr=0.05)
    model, optimizer = amp.initialize(model, optimizer, opt_level=level)
    assert model[0].weight.dtype == torch.float16 and model[1].weight.dtype == bn_dtype
    before = model[0].weight.detach().cpu().clone()
    scales = []
    for _ in range(4):  # float16 gradients can overflow at 2**16: apex then skips and halves
        out = model(torch.randn(2, 3, 8, 8, device="npu"))
        assert out.dtype == torch.float32  # outputs are cast back, as apex does
        loss = torch.nn.functional.cross_entropy(out, torch.tensor([0, 2], device="npu"))
        optimizer.zero_grad()
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        optimizer.step()
        scales.append(amp.state_dict()["loss_scaler0"]["loss_scale"])
    if level == "O3":
        assert scales == [1.0] * 4
    else:
        assert all(s in (2.0**16, 2.0**15, 2.0**14, 2.0**13) for s in scales) and scales == sorted(
            scales, reverse=True
        )
    assert not torch.equal(before, model[0].weight.detach().cpu())
