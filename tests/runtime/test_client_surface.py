"""What client frameworks (transformers, accelerate, Lightning, timm, peft) ask of torch_npu / torch.npu."""

from __future__ import annotations

import copy
import importlib
import math

import pytest
import torch
import torch.nn.functional as F
from conftest import run_python


def test_feature_probes_see_absent_names():
    import torch_npu

    assert not hasattr(torch_npu, "npu_not_a_real_op")
    assert getattr(torch_npu, "npu_rotary_mul_not_simulated", None) is None
    with pytest.raises(AttributeError, match=r"torch_npu\.npu_xyz is not simulated by runtime_shim"):
        torch_npu.npu_xyz  # noqa: B018
    with pytest.raises(ImportError, match="npu_xyz"):
        exec("from torch_npu import npu_xyz")
    from torch_npu import npu_fusion_attention  # simulated: importable
    from torch_npu.optim import NpuFusedAdamW  # transformers' optimizer choice

    assert callable(npu_fusion_attention) and NpuFusedAdamW is not None


def test_rng_state_modules_for_checkpoints():
    import torch_npu.npu.random as by_torch_npu

    by_torch = importlib.import_module("torch.npu.random")
    assert by_torch is by_torch_npu is torch.npu.random
    states = torch.npu.random.get_rng_state_all()
    assert len(states) == torch.npu.device_count() and states[0].dtype == torch.uint8
    first = torch.randn(4, device="npu")
    torch.npu.random.set_rng_state_all(states)
    assert torch.equal(torch.randn(4, device="npu"), first)
    torch.npu.random.set_rng_state(torch.npu.random.get_rng_state())


def test_npu_utils_and_cann_version():
    utils = importlib.import_module("torch.npu.utils")
    assert utils is torch.npu.utils
    assert utils.current_device is torch.npu.current_device
    assert utils.is_bf16_supported() is True
    assert utils.is_support_inf_nan() is True
    with pytest.raises(NotImplementedError, match="get_cann_version is not simulated"):
        utils.get_cann_version()
    assert torch.version.cann is None  # no CANN; torch_npu's own code tests `is not None`


def test_module_move_keeps_parameter_objects_so_an_earlier_optimizer_trains(npu):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    params = list(model.parameters())
    before = [p.detach().clone() for p in params]
    model.to(npu)
    assert [p is q for p, q in zip(model.parameters(), params)] == [True] * 4
    assert all(p.device == npu for p in params)
    model(torch.randn(5, 4, device=npu)).sum().backward()
    optimizer.step()
    assert all(not torch.equal(p.detach().cpu(), b) for p, b in zip(params, before))
    model.to("cpu")
    assert all(p.device.type == "cpu" for p in params) and params[0] is next(model.parameters())


def test_shallow_copy_check_answers_like_torch_npu(npu):
    check = torch._has_compatible_shallow_copy_type
    assert check(torch.ones(1), torch.ones(1, device=npu))
    assert check(torch.ones(1, device=npu), torch.ones(1))
    assert check(torch.ones(1, device=npu), torch.ones(1, device=npu))
    assert not check(torch.ones(2, 2, device=npu), torch.ones(2, 2).to_sparse())


@pytest.mark.slow
def test_apex_o1_keeps_new_parameters_and_deepcopy_working(npu):
    # A fresh process: apex O1 leaves autocast on for the whole process.
    script = (
        "import copy, runtime_shim; runtime_shim.activate()\n"
        "import torch\n"
        "from apex import amp\n"
        "model = torch.nn.Linear(4, 4).npu()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model, opt = amp.initialize(model, opt, opt_level='O1')\n"
        "other = torch.nn.Linear(4, 4).npu()\n"
        "ema = copy.deepcopy(model)\n"
        "p = torch.nn.Parameter(torch.ones(2, device='npu'))\n"
        "out = model(torch.ones(2, 4, device='npu'))\n"
        "assert out.dtype == torch.float16, out.dtype\n"
        "assert torch.equal(ema.weight.cpu(), model.weight.cpu()) and other.weight.device.type == 'npu'\n"
        "print('ok')\n"
    )
    proc = run_python(["-c", script])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok"


def test_autocast_leaves_ops_outside_its_policy_in_cpp(npu):
    with torch.autocast("npu", dtype=torch.bfloat16):
        weight = torch.nn.Parameter(torch.ones(3, device=npu))
        clone = copy.deepcopy(torch.nn.Linear(2, 2).to(npu))
        out = torch.mm(torch.ones(2, 2, device=npu), torch.ones(2, 2, device=npu))
    assert weight.device == npu and clone.weight.device == npu
    assert out.dtype == torch.bfloat16


def test_python_number_in_a_tensor_slot(npu):
    t = torch.tensor([1, 2, 3], dtype=torch.int8)
    assert torch.equal((t.to(npu) ^ 6).cpu(), t ^ 6) and (t.to(npu) ^ 6).dtype == torch.int8
    assert torch.equal((t.to(npu) | True).cpu(), t | True)


def _reference_attention(q, k, v, scale, mask):
    scores = (q.double() @ k.double().transpose(-2, -1)) * scale
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, -1) @ v.double()


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
@pytest.mark.parametrize("sparse_mode", [0, 2, 3])
def test_npu_fusion_attention_equals_sdpa(npu, layout, sparse_mode):
    from torch_npu import npu_fusion_attention

    torch.manual_seed(0)
    b, n, s, skv, d = 2, 2, 3, 5 if sparse_mode == 3 else 3, 4
    q, k, v = torch.randn(b, n, s, d), torch.randn(b, n, skv, d), torch.randn(b, n, skv, d)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1) if sparse_mode else None
    if sparse_mode == 0:
        mask = torch.rand(s, skv) > 0.7
        mask[:, 0] = False  # every row attends somewhere

    def to_layout(t):
        if layout == "BSND":
            return t.transpose(1, 2)
        if layout == "BSH":
            return t.transpose(1, 2).reshape(b, t.shape[2], n * d)
        if layout == "SBH":
            return t.permute(2, 0, 1, 3).reshape(t.shape[2], b, n * d)
        return t

    args = [to_layout(t).to(npu) for t in (q, k, v)]
    out, row_max, row_sum, _, seed, offset, numels = npu_fusion_attention(
        *args,
        n,
        layout,
        atten_mask=None if mask is None else mask.to(npu),
        scale=0.5,
        sparse_mode=sparse_mode,
    )
    assert out.device == npu and (seed, offset, numels) == (0, 0, 0)
    if sparse_mode == 0:
        sdpa_mask = ~mask
        ref_mask = mask
    else:
        sdpa_mask = torch.ones(s, skv, dtype=torch.bool).tril(skv - s if sparse_mode == 3 else 0)
        ref_mask = ~sdpa_mask
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=sdpa_mask, scale=0.5)
    assert torch.equal(out.cpu(), to_layout(expected))
    torch.testing.assert_close(out.cpu().double(), to_layout(_reference_attention(q, k, v, 0.5, ref_mask)))
    assert row_max.shape == (b, n, s, 8) and row_sum.shape == (b, n, s, 8)
    scores = (q @ k.transpose(-2, -1)) * 0.5
    scores = scores.masked_fill(ref_mask, float("-inf"))
    torch.testing.assert_close(row_max[..., 0].cpu(), scores.amax(-1))


def test_npu_fusion_attention_varlen_causal(npu):
    from torch_npu import npu_fusion_attention

    torch.manual_seed(0)
    lengths = [3, 5]
    t, n, d = sum(lengths), 2, 4
    q, k, v = (torch.randn(t, n, d) for _ in range(3))
    ends = [3, 8]
    out = npu_fusion_attention(
        q.to(npu),
        k.to(npu),
        v.to(npu),
        n,
        "TND",
        atten_mask=torch.ones(2048, 2048, dtype=torch.bool, device=npu).triu(1),
        scale=1 / math.sqrt(d),
        actual_seq_qlen=ends,
        actual_seq_kvlen=ends,
        sparse_mode=3,
    )[0]
    pieces = []
    for start, end in zip([0, 3], ends):
        qs, ks, vs = (x[start:end].transpose(0, 1).unsqueeze(0) for x in (q, k, v))
        attended = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, scale=1 / math.sqrt(d))
        pieces.append(attended.squeeze(0).transpose(0, 1))
    assert torch.equal(out.cpu(), torch.cat(pieces))


def test_npu_fusion_attention_refuses_what_it_does_not_simulate(npu):
    from torch_npu import npu_fusion_attention

    q = torch.randn(1, 2, 4, device=npu)
    with pytest.raises(NotImplementedError, match="pse is not simulated"):
        npu_fusion_attention(q, q, q, 2, "BSH", pse=q)
    with pytest.raises(NotImplementedError, match="sparse_mode=4 is not simulated"):
        npu_fusion_attention(q, q, q, 2, "BSH", sparse_mode=4)
    with pytest.raises(ValueError, match="input_layout 'XYZ'"):
        npu_fusion_attention(q, q, q, 2, "XYZ")
