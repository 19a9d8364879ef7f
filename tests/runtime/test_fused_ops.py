"""The torch_npu stand-in's fused operators (runtime_shim/torch_npu_stub/fused_ops.py) against the
formulas torch_npu documents, written here independently and run on the CPU: values, returned
tuples and dtypes, gradients, and the arguments they refuse."""

from __future__ import annotations

import pytest
import torch
import torch_npu


def _rms_norm(x: torch.Tensor, gamma: torch.Tensor, eps: float) -> torch.Tensor:
    # x / sqrt(mean(x^2) + eps) * gamma over gamma's trailing dimensions, in float32
    flat = x.float().reshape(*x.shape[: x.dim() - gamma.dim()], -1)
    rms = (flat.pow(2).sum(-1) / flat.shape[-1] + eps).sqrt()
    return (flat / rms.unsqueeze(-1)).reshape(x.shape) * gamma.float()


def _rotate(x: torch.Tensor, mode: str) -> torch.Tensor:
    half = x.shape[-1] // 2
    out = torch.empty_like(x)
    if mode == "half":
        out[..., :half], out[..., half:] = -x[..., half:], x[..., :half]
    else:
        out[..., 0::2], out[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_rms_norm_values_outputs_and_dtypes(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 16, generator=g).to(dtype)
    gamma = torch.randn(16, generator=g).to(dtype)
    y, rstd = torch_npu.npu_rms_norm(x.to("npu"), gamma.to("npu"), epsilon=1e-5)
    assert y.device.type == "npu" and y.dtype == dtype and y.shape == x.shape
    assert rstd.dtype == torch.float32 and rstd.shape == (3, 5, 1)
    torch.testing.assert_close(y.cpu().float(), _rms_norm(x, gamma, 1e-5).to(dtype).float())
    torch.testing.assert_close(rstd.cpu(), _rms_norm(x, torch.ones(16), 1e-5)[..., :1] / x.float()[..., :1])
    # gamma over the last two dimensions normalises over both
    y2, rstd2 = torch_npu.npu_rms_norm(x.float().to("npu"), torch.ones(5, 16, device="npu"))
    assert rstd2.shape == (3, 1, 1)
    torch.testing.assert_close(y2.cpu(), _rms_norm(x.float(), torch.ones(5, 16), 1e-6))


@pytest.mark.parametrize("mode", ["half", "interleave"])
def test_rotary_mul_both_modes(mode):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 4, 3, 8, generator=g)
    cos, sin = torch.randn(1, 4, 1, 8, generator=g), torch.randn(1, 4, 1, 8, generator=g)
    out = torch_npu.npu_rotary_mul(x.to("npu"), cos.to("npu"), sin.to("npu"), rotary_mode=mode)
    torch.testing.assert_close(out.cpu(), cos * x + sin * _rotate(x, mode))


@pytest.mark.parametrize(
    "shape", [(1, 1, 3, 8), (2, 1, 3, 8), (1, 4, 1, 8), (2, 4, 1, 8), (2, 1, 1, 8), (2, 4, 3, 8)]
)
def test_rotary_mul_takes_every_documented_broadcast_shape(shape):
    """x (2, 4, 3, 8) read as BNSD, BSND or SBND: r1/r2 as 11SD, B1SD, 1S1D, BS1D/SB1D, S11D or x's shape."""
    g = torch.Generator().manual_seed(4)
    x, cos, sin = (
        torch.randn(2, 4, 3, 8, generator=g),
        torch.randn(shape, generator=g),
        torch.randn(shape, generator=g),
    )
    out = torch_npu.npu_rotary_mul(x.to("npu"), cos.to("npu"), sin.to("npu"))
    assert torch.equal(out.cpu(), x * cos + _rotate(x, "half") * sin)


def test_swiglu_along_any_dim():
    x = torch.randn(4, 6, 10, generator=torch.Generator().manual_seed(2))
    for dim, (a, b) in ((-1, (x[..., :5], x[..., 5:])), (1, (x[:, :3], x[:, 3:]))):
        out = torch_npu.npu_swiglu(x.to("npu"), dim=dim)
        torch.testing.assert_close(out.cpu(), a * torch.sigmoid(a) * b)


def test_confusion_transpose_order():
    x = torch.arange(24.0).reshape(2, 3, 4)
    first = torch_npu.npu_confusion_transpose(x.to("npu"), [0, 2, 1], [2, 12], True)
    torch.testing.assert_close(first.cpu(), x.transpose(1, 2).reshape(2, 12))
    after = torch_npu.npu_confusion_transpose(x.to("npu"), [1, 0], [6, 4], False)
    torch.testing.assert_close(after.cpu(), x.reshape(6, 4).t())


def test_gradients_flow_as_through_the_composition_on_the_cpu():
    g = torch.Generator().manual_seed(3)
    x, gamma = torch.randn(2, 2, 3, 8, generator=g), torch.randn(8, generator=g)
    cos, sin = torch.randn(1, 1, 3, 8, generator=g), torch.randn(1, 1, 3, 8, generator=g)
    grads = {}
    for device in ("cpu", "npu"):
        xs = x.to(device).detach().requires_grad_()
        gs = gamma.to(device).detach().requires_grad_()
        h, _ = torch_npu.npu_rms_norm(xs, gs)
        h = torch_npu.npu_rotary_mul(h, cos.to(device), sin.to(device))
        torch_npu.npu_swiglu(h).pow(2).sum().backward()
        grads[device] = (xs.grad.cpu(), gs.grad.cpu())
    for npu_grad, cpu_grad in zip(grads["npu"], grads["cpu"]):
        assert torch.equal(npu_grad, cpu_grad)  # the same composition: bit for bit


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: torch_npu.npu_rotary_mul(torch.ones(2, 4), torch.ones(4), torch.ones(4), "quarter"), ValueError, "rotary_mode must be one of half, interleave"),
        (lambda: torch_npu.npu_rotary_mul(torch.ones(2, 3, 8), torch.ones(1, 3, 8), torch.ones(1, 3, 8)), ValueError, "input has 3 dimensions, not the 4"),
        (lambda: torch_npu.npu_rotary_mul(torch.ones(2, 4, 3, 8), torch.ones(3, 8)[None, None], torch.ones(3, 8)), ValueError, "r2 has 2 dimensions"),
        (lambda: torch_npu.npu_rotary_mul(torch.ones(2, 4, 3, 8), torch.ones(1, 4, 3, 8), torch.ones(1, 4, 3, 8)), ValueError, r"r1 of shape \(1, 4, 3, 8\) is none of the shapes"),
        (lambda: torch_npu.npu_rotary_mul(torch.ones(2, 4, 3, 7), torch.ones(1, 1, 3, 7), torch.ones(1, 1, 3, 7)), ValueError, "last dimension .7. must be even"),
        (lambda: torch_npu.npu_rotary_mul(torch.ones(2, 4, 3, 8, dtype=torch.bfloat16), torch.ones(1, 1, 3, 8), torch.ones(1, 1, 3, 8)), TypeError, "must share one dtype"),
        (lambda: torch_npu.npu_swiglu(torch.ones(2, 5)), ValueError, "does not split in two halves"),
        (lambda: torch_npu.npu_rms_norm(torch.ones(2, 4, dtype=torch.int64), torch.ones(4)), TypeError, "is not float16, bfloat16 or float32"),
        (lambda: torch_npu.npu_rms_norm(torch.ones(2, 4), torch.ones(3)), ValueError, "is not the trailing shape"),
    ],
)  # fmt: skip
def test_what_torch_npu_refuses_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_operators_still_not_simulated_say_so():
    with pytest.raises(AttributeError, match="npu_moe_gating_top_k"):
        torch_npu.npu_moe_gating_top_k  # noqa: B018


@pytest.mark.parametrize(("amsgrad", "maximize"), [(False, False), (True, False), (False, True)])
def test_apply_adam_w_steps_as_torch_adamw_does(amsgrad, maximize):
    """Three steps of npu_apply_adam_w on the simulated NPU against torch.optim.AdamW on the CPU,
    the powers passed as beta ** (t - 1) and the amsgrad maximum kept by the caller."""
    g = torch.Generator().manual_seed(3)
    start = torch.randn(4, 6, generator=g)
    grads = [torch.randn(4, 6, generator=g) for _ in range(3)]
    lr, wd, (b1, b2), eps = 1e-2, 0.1, (0.9, 0.99), 1e-8
    reference = torch.nn.Parameter(start.clone())
    adamw = torch.optim.AdamW(
        [reference], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, amsgrad=amsgrad, maximize=maximize
    )
    var = start.to("npu")
    m, v = torch.zeros_like(var), torch.zeros_like(var)
    most = torch.zeros_like(var)
    for t, grad in enumerate(grads, 1):
        reference.grad = grad.clone()
        adamw.step()
        out = torch_npu.npu_apply_adam_w(
            b1 ** (t - 1),
            b2 ** (t - 1),
            lr,
            wd,
            b1,
            b2,
            eps,
            grad.to("npu"),
            most if amsgrad else None,
            amsgrad,
            maximize,
            out=(var, m, v),
        )
        assert out[0] is var and out[1] is m and out[2] is v  # updated in place, and returned
        most = torch.maximum(most, v)
        torch.testing.assert_close(var.cpu(), reference.detach(), rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(m.cpu(), adamw.state[reference]["exp_avg"])
        torch.testing.assert_close(v.cpu(), adamw.state[reference]["exp_avg_sq"])
    assert var.device.type == "npu"


def test_apply_adam_w_refuses_what_it_cannot_do():
    grad = torch.ones(3)
    with pytest.raises(NotImplementedError, match=r"without out=.* is not simulated"):
        torch_npu.npu_apply_adam_w(1.0, 1.0, 0.1, 0.0, 0.9, 0.99, 1e-8, grad)
    with pytest.raises(ValueError, match="amsgrad=True needs max_grad_norm"):
        torch_npu.npu_apply_adam_w(
            1.0,
            1.0,
            0.1,
            0.0,
            0.9,
            0.99,
            1e-8,
            grad,
            None,
            True,
            out=(grad.clone(), grad.clone(), grad.clone()),
        )


def test_every_torch_npu_replacement_the_advice_names_is_simulated():
    """What `--advice` tells a user to call runs on the simulated NPU, for every release."""
    import functools

    from ms_fmk_transplt import data
    from ms_fmk_transplt.advice import advisor

    named = {
        fact.replacement
        for release in data.releases()
        for fact in advisor(release).facts
        if fact.replacement.startswith("torch_npu.")
    }
    assert "torch_npu.npu_fusion_attention" in named and "torch_npu.optim.NpuFusedSGD" in named
    for name in sorted(named):
        assert callable(functools.reduce(getattr, name.split(".")[1:], torch_npu)), name


@pytest.mark.parametrize("function", ["causal", "scaled"])
def test_affinity_rewrite_of_sdpa_is_bit_for_bit_on_the_simulated_npu(function):
    """The fixture of `--opt-in affinity` (TP950) run as converted on the simulated NPU, against
    the original on the CPU: the tolerance the rule states here is none."""
    from pathlib import Path
    from types import SimpleNamespace

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "fused_calls+affinity"
    original, converted = {}, {}
    exec((folder / "sdpa_fused.in.py").read_text(), original)
    exec((folder / "sdpa_fused.out.py").read_text(), converted)
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=g) for _ in range(3))
    args = (q, k, v) if function == "causal" else (SimpleNamespace(q=q), q, k, v)
    on_npu = [a if isinstance(a, SimpleNamespace) else a.to("npu") for a in args]
    if function == "scaled":
        on_npu[0] = SimpleNamespace(q=q.to("npu"))
    expected = original[function](*args)
    got = converted[function](*on_npu)
    assert got.device.type == "npu" and torch.equal(got.cpu(), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("model", ["Attention", "Unmasked"])
def test_affinity_rewrite_of_hand_written_attention_matches_it(model, dtype):
    """TP957's fixture: the hand-written attention on the CPU (the plain composition) against its
    rewrite to npu_fusion_attention on the simulated NPU, causal and unmasked, within the rounding
    of the dtype (the composition rounds its scores, the fused call does not)."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "fused_calls+affinity"
    original, converted = {}, {}
    exec((folder / "attention_fused.in.py").read_text(), original)
    exec((folder / "attention_fused.out.py").read_text(), converted)
    make = {"Attention": lambda ns: ns["Attention"](32, 4, 16), "Unmasked": lambda ns: ns["Unmasked"](8)}[
        model
    ]
    g = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=g).to(dtype) for _ in range(3))
    expected = make(original)(q, k, v)
    got = make(converted).to("npu")(q.to("npu"), k.to("npu"), v.to("npu"))
    assert got.device.type == "npu" and got.dtype == dtype
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 2**-7, "atol": 2**-7}
    torch.testing.assert_close(got.cpu(), expected, **tolerance)


def test_fusion_attention_refuses_a_rank_its_layout_does_not_have():
    q = torch.ones(2, 6, 8)
    with pytest.raises(ValueError, match="query has 3 dimensions, not the 4 of layout BNSD"):
        torch_npu.npu_fusion_attention(q, q, q, 1, "BNSD")


def _fixture_pair(name: str) -> tuple[dict, dict]:
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "fused_calls+affinity"
    original: dict = {}
    converted: dict = {}
    exec((folder / f"{name}.in.py").read_text(), original)
    exec((folder / f"{name}.out.py").read_text(), converted)
    return original, converted


@pytest.mark.parametrize("cls", ["LlamaRMSNorm", "MetaRMSNorm", "PlainRMSNorm"])
def test_affinity_rewrite_of_rms_norm_is_bit_for_bit_in_float32(cls, monkeypatch):
    """TP954's fixture run as converted on the simulated NPU against the original on the CPU:
    float32 outputs bit for bit, gradients too where the square is spelled as the stand-in's
    (`pow(2)`), else within float32 rounding (the rule's tolerance), and the fused operator ran."""
    original, converted = _fixture_pair("rms_norm_fused")
    calls = []
    fused = torch_npu.npu_rms_norm
    monkeypatch.setattr(torch_npu, "npu_rms_norm", lambda *a, **k: calls.append(1) or fused(*a, **k))
    torch.manual_seed(3)
    before = original[cls](8)
    with torch.no_grad():
        before.get_parameter(next(n for n, _ in before.named_parameters())).uniform_(0.5, 1.5)
    after = converted[cls](8).to("npu")
    after.load_state_dict(before.state_dict())
    x = torch.randn(2, 5, 8, requires_grad=True)
    x_npu = x.detach().to("npu").requires_grad_(True)
    expected, got = before(x), after(x_npu)
    expected.square().sum().backward()
    got.square().sum().backward()
    assert calls and got.device.type == "npu"
    assert torch.equal(got.cpu(), expected)
    grads = [x.grad, *(p.grad for p in before.parameters())]
    fused_grads = [x_npu.grad.cpu(), *(p.grad.cpu() for p in after.parameters())]
    if cls == "PlainRMSNorm":  # x * x: its backward rounds otherwise than pow's
        assert all(torch.allclose(a, b, rtol=1e-6, atol=1e-7) for a, b in zip(grads, fused_grads))
    else:
        assert all(torch.equal(a, b) for a, b in zip(grads, fused_grads))


def test_affinity_rewrite_of_swiglu_is_within_float32_rounding(monkeypatch):
    """TP955's fixture: the two-projection and the chunked form, through npu_swiglu, give what the
    original gives on the same simulated device, within float32 rounding (silu of a half, a
    strided view, may take another vectorised path than silu of a whole tensor)."""
    original, converted = _fixture_pair("swiglu_fused")
    calls = []
    fused = torch_npu.npu_swiglu
    monkeypatch.setattr(torch_npu, "npu_swiglu", lambda *a, **k: calls.append(1) or fused(*a, **k))
    torch.manual_seed(4)
    x = torch.randn(3, 6)
    x = x.to("npu")
    assert torch.allclose(converted["swiglu"](x), original["swiglu"](x), rtol=1e-6, atol=1e-7)
    for cls in ("FeedForward", "NamedProjections", "Rebinding"):
        before = original[cls](6, 10).to("npu")
        after = converted[cls](6, 10).to("npu")
        after.load_state_dict(before.state_dict())
        assert torch.allclose(after(x), before(x), rtol=1e-6, atol=1e-7)
    assert len(calls) == 4
