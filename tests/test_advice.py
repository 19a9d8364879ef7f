"""Performance advice (ms_fmk_transplt/advice/): each pattern found where it is, and a
must-not-advise twin beside it; the catalogue per release; the reports that carry it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ms_fmk_transplt import data
from ms_fmk_transplt.advice import advisor, catalogue
from ms_fmk_transplt.records import Operation

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "ascend-data"
HEAD = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def _advice(code: str, release: str = "2.13.0") -> list[tuple[str, int]]:
    source = (HEAD + textwrap.dedent(code).lstrip("\n")).encode()
    found = advisor(release).advise(source)
    assert all(f.operation is Operation.ADVICE for f in found)
    return [(f.rule_id, f.start_line - HEAD.count("\n")) for f in found]


# (id, code, line advised): each found where it is
FOUND = {
    "rms_norm_variance": (
        "AF101",
        """
        def forward(self, x):
            variance = x.pow(2).mean(-1, keepdim=True)
            return x * torch.rsqrt(variance + self.eps) * self.weight
        """,
        3,
    ),
    "rms_norm_inline_method": (
        "AF101",
        """
        def norm(x, w, eps=1e-6):
            return x * (torch.mean(x * x, -1, keepdim=True) + eps).rsqrt() * w
        """,
        2,
    ),
    "rotary_halves": (
        "AF102",
        """
        def rotate_half(x):
            x1 = x[..., : x.shape[-1] // 2]
            x2 = x[..., x.shape[-1] // 2 :]
            return torch.cat((-x2, x1), dim=-1)
        """,
        4,
    ),
    "rotary_chunk": (
        "AF102",
        """
        def rotate_half(x):
            x1, x2 = x.chunk(2, dim=-1)
            return torch.cat([-x2, x1], -1)
        """,
        3,
    ),
    "rotary_complex": (
        "AF106",
        """
        def apply_rotary_emb(xq, freqs_cis):
            xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
            return torch.view_as_real(xq_ * freqs_cis).flatten(3).type_as(xq)
        """,
        3,
    ),
    "swiglu": (
        "AF103",
        """
        class MLP(nn.Module):
            def forward(self, x):
                return self.w2(F.silu(self.w1(x)) * self.w3(x))
        """,
        3,
    ),
    "attention_nanogpt": (
        "AF104",
        """
        def forward(self, q, k, v):
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
            return y
        """,
        6,
    ),
    "attention_matmul": (
        "AF104",
        """
        def attend(q, k, v):
            return torch.matmul(torch.softmax(torch.matmul(q, k.mT) / 8, dim=-1), v)
        """,
        2,
    ),
    "attention_input_reassigned_from_output": (
        "AF104",
        """
        def forward(self, x):
            qkv = x.reshape(B, N, H, D).transpose(1, 2)
            attn = (qkv * self.scale) @ qkv.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            x = attn @ qkv
            return x
        """,
        5,
    ),
    "sdpa": ("AF105", "y = F.scaled_dot_product_attention(q, k, v, is_causal=True)\n", 1),
    "adamw": ("AF201", "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n", 1),
    "sgd_from_import": ("AF203", "from torch.optim import SGD\nopt = SGD(params, lr=0.1)\n", 2),
    "loader_pin": (
        "AF301",
        "from torch.utils.data import DataLoader\nDataLoader(ds, 8, num_workers=4)\n",
        2,
    ),
    "loader_workers": (
        "AF302",
        "from torch.utils.data import DataLoader\nDataLoader(ds, 8, num_workers=0, pin_memory=True)\n",
        2,
    ),
    "ddp": (
        "AF303",
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model, device_ids=[0])\n",
        2,
    ),
    "anomaly": ("AF304", "torch.autograd.set_detect_anomaly(True)\n", 1),
    "anomaly_context": ("AF304", "with torch.autograd.detect_anomaly():\n    loss.backward()\n", 1),
    "float64": ("AF305", "x = torch.zeros(3, dtype=torch.float64)\n", 1),
    "float64_on_the_device": ("AF305", "acc = torch.zeros(3, device=device).to(torch.float64)\n", 1),
    "double_on_the_device": ("AF305", "y = x.to(device).double() * w\n", 1),
    "item_per_step": (
        "AF306",
        """
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        """,
        5,
    ),
    "cpu_per_step": (
        "AF307",
        """
        while True:
            loss = model(batch)
            loss.backward()
            preds.append(loss.detach().cpu())
        """,
        4,
    ),
}

FOUND.update(
    {
        "compile_mode_online": (
            "AF308",
            "import torch_npu\ntorch_npu.npu.set_compile_mode(jit_compile=True)\n",
            2,
        ),
        "task_queue_off": ("AF309", "import os\nos.environ['TASK_QUEUE_ENABLE'] = '0'\n", 2),
        "task_queue_off_by_default": (
            "AF309",
            "import os\nos.environ.setdefault('TASK_QUEUE_ENABLE', '0')\n",
            2,
        ),
    }
)

# must-not-advise twins: the same shapes where the condition does not hold
TWINS = {
    "mean_of_squares_without_rsqrt": """
        def mse(a, b):
            return ((a - b) ** 2).mean()
        """,
    "rsqrt_of_a_variance": """
        def layer_norm(x, eps):
            return (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, keepdim=True) + eps)
        """,
    "rsqrt_of_a_mean_not_squared": """
        def f(x, eps):
            m = x.abs().mean(-1)
            return torch.rsqrt(m + eps)
        """,
    "cat_of_unrelated_tensors": """
        def join(a, b):
            return torch.cat((-a, b), dim=-1)
        """,
    "cat_of_halves_on_dim_0": """
        def rotate(x):
            x1, x2 = x.chunk(2, dim=0)
            return torch.cat((-x2, x1), dim=0)
        """,
    "complex_view_not_multiplied": """
        def spectrum(x):
            return torch.view_as_complex(x).abs()
        """,
    "silu_alone_or_scaled": """
        def act(x):
            return F.silu(x) * 2 + F.silu(x)
        """,
    "softmax_of_logits": """
        def classify(h, w):
            return F.softmax(h @ w, dim=-1)
        """,
    "scores_softmax_not_applied_to_values": """
        def attention_map(q, k):
            return F.softmax(q @ k.transpose(-2, -1), dim=-1)
        """,
    "other_optimizer": "opt = torch.optim.LBFGS(params)\n",
    "loader_set_up_well": (
        "from torch.utils.data import DataLoader\nDataLoader(ds, 8, num_workers=4, pin_memory=True)\n"
    ),
    "loader_settings_from_config": (
        "from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=args.workers, pin_memory=args.pin)\n"
    ),
    "loader_kwargs": "from torch.utils.data import DataLoader\nDataLoader(ds, **loader_kwargs)\n",
    "ddp_with_bucket": (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nDDP(model, bucket_cap_mb=200)\n"
    ),
    "anomaly_off_or_configured": (
        "torch.autograd.set_detect_anomaly(False)\ntorch.autograd.set_detect_anomaly(args.debug)\n"
    ),
    "numpy_float64": "import numpy as np\nx = np.zeros(3, dtype=np.float64)\n",
    "compile_mode_set": """
        import torch_npu
        torch_npu.npu.set_compile_mode(jit_compile=False)
        for x, y in loader:
            model(x, y).backward()
        """,
    "compile_mode_unset": """
        import torch_npu
        for x, y in loader:
            model(x, y).backward()
        """,
    "cuda_code_training": """
        for x, y in loader:
            model(x, y).backward()
        """,
    "task_queue_on": "import os\nos.environ['TASK_QUEUE_ENABLE'] = '1'\nos.environ['OTHER'] = '0'\n",
    "float64_metrics_on_the_host": (
        "total = loss.detach().cpu().double()\n"
        "preds = logits.double().cpu().numpy()\n"
        "hist = out.cpu().to(torch.float64)\n"
        "acc = torch.zeros(3, dtype=torch.float64, device='cpu')\n"
        "vals = y.double().tolist()\n"
    ),
    "float64_in_a_hint": "def f(x: torch.float64) -> None:\n    pass\n",
    "item_outside_the_loop": """
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            opt.step()
        print(loss.item())
        """,
    "item_at_a_logging_interval": """
        for step, (x, y) in enumerate(loader):
            loss = model(x, y)
            loss.backward()
            opt.step()
            if step % 100 == 0:
                print(loss.item(), x.cpu())
        """,
    "item_in_an_evaluation_loop": """
        for x, y in loader:
            total += model(x).eq(y).sum().item()
            preds.append(model(x).cpu())
        """,
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_pattern_is_advised_where_it_is(name: str) -> None:
    advice_id, code, line = FOUND[name]
    assert (advice_id, line) in _advice(code)


@pytest.mark.parametrize("name", sorted(TWINS))
def test_twin_is_not_advised(name: str) -> None:
    assert _advice(TWINS[name]) == []


def test_every_advice_has_a_fixture_and_every_fixture_one_finding() -> None:
    ids = {entry["id"] for entry in catalogue()["advice"]}
    # optimizers share one detector: Adam, RMSprop and Adadelta are the same lookup as AdamW and SGD
    assert ids - {advice_id for advice_id, _, _ in FOUND.values()} == {"AF202", "AF204", "AF205"}
    for name, (advice_id, code, _) in FOUND.items():
        assert [i for i, _ in _advice(code)] == [advice_id], name


def test_finding_carries_replacement_condition_and_source() -> None:
    (finding,) = advisor("2.12.0").advise(b"import torch\nopt = torch.optim.AdamW(p)\n")
    assert finding.message == "torch.optim.AdamW -> torch_npu.optim.NpuFusedAdamW"
    assert finding.api == "torch.optim.AdamW" and finding.column == 7
    assert finding.suggestion.startswith("torch_npu.optim.NpuFusedAdamW when every parameter on the NPU")
    assert "torch_npu-optim-NpuFusedAdamW.md" in finding.source


@pytest.mark.parametrize("release", data.releases())
def test_every_release_has_advice_backed_by_its_own_data(release: str) -> None:
    facts = advisor(release).facts
    assert {f.replacement for f in facts} >= {
        "torch_npu.npu_rms_norm",
        "torch_npu.npu_rotary_mul",
        "torch_npu.npu_swiglu",
        "torch_npu.npu_fusion_attention",
        "torch_npu.optim.NpuFusedAdamW",
    }
    for fact in facts:
        if fact.replacement.startswith("torch_npu.npu_"):
            assert fact.replacement.removeprefix("torch_npu.") in fact.source, fact


def test_advice_a_release_data_does_not_back_is_left_out() -> None:
    # float64 advice rests on a native API list's dtypes: 2.6.0 and 2.8.0 have none in the data
    code = b"import torch\nx = torch.ones(2, dtype=torch.float64)\n"
    assert [f.rule_id for f in advisor("2.13.0").advise(code)] == ["AF305"]
    assert advisor("2.6.0").advise(code) == ()
    assert "AF305" not in {f.id for f in advisor("2.8.0").facts}


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"{SHARED_DATA} is not on this machine")
@pytest.mark.parametrize("release", data.releases())
def test_fused_operator_advised_is_in_the_release_operator_list(release: str) -> None:
    """Read the list itself again: every torch_npu.npu_* replacement is an NPU operator there."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from ascend_releases import releases
    finally:
        sys.path.pop(0)
    (files,) = [r for r in releases(SHARED_DATA) if r.torch == release]
    name = files.aten_ops.file.replace("npu_aten_ops_", "npu_custom_ops_")
    ops = {line.split(".")[0] for line in (SHARED_DATA / "aten_ops" / name).read_text().split()}
    named = {f.replacement.removeprefix("torch_npu.") for f in advisor(release).facts}
    assert {n for n in named if n.startswith("npu_")} <= ops


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"{SHARED_DATA} is not on this machine")
def test_shipped_advice_is_derived_from_shared_ascend_data() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "derive_advice.py"), "--source", str(SHARED_DATA), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_file_without_any_pattern_word_is_not_parsed() -> None:
    assert advisor("2.13.0").advise(b"import torch\nx = torch.ones(2)\n") == ()
    assert advisor("2.13.0").advise(b"def broken(:\n  item\n") == ()


def test_catalogue_entries_are_complete() -> None:
    for entry in catalogue()["advice"]:
        for key in ("id", "pattern", "found", "replacement", "condition", "gain", "evidence"):
            assert entry[key], (entry["id"], key)
    assert json.dumps(catalogue())  # plain data


def _advised(path: Path) -> set[str]:
    return {f.rule_id for f in advisor("2.13.0").advise(path.read_bytes())}


def test_llama_style_sample_gets_every_fused_operator_advice() -> None:
    found = _advised(ROOT / "sample_models" / "llama_mini" / "train.py")
    assert {"AF101", "AF102", "AF103", "AF104", "AF201"} <= found


def test_nanogpt_sample_gets_attention_and_optimizer_advice() -> None:
    # its SDPA path and its hand-written one (config.flash False), and its AdamW
    assert {"AF104", "AF105", "AF201"} <= _advised(ROOT / "sample_models" / "nanogpt_amp" / "train.py")


def test_the_text_check_before_parsing_changes_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """`worth_parsing` only saves parses: every fixture, twin and sample gets the same advice with
    it as with every file parsed."""
    import ms_fmk_transplt.advice as advice_module

    sources = [(HEAD + textwrap.dedent(code).lstrip("\n")).encode() for _, code, _ in FOUND.values()]
    sources += [(HEAD + textwrap.dedent(code).lstrip("\n")).encode() for code in TWINS.values()]
    sources += [p.read_bytes() for p in sorted((ROOT / "sample_models").rglob("*.py"))]
    sources += [p.read_bytes() for p in sorted((ROOT / "ms_fmk_transplt").rglob("*.py"))]
    checked = advisor("2.13.0")
    with_check = [checked.advise(source) for source in sources]
    monkeypatch.setattr(advice_module, "worth_parsing", lambda data: True)
    assert [checked.advise(source) for source in sources] == with_check
    assert sum(bool(found) for found in with_check) >= len(FOUND)
