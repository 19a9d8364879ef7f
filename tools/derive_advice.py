"""Derive the performance advice catalogue (ms_fmk_transplt/data/advice.json) from ascend-data.

Run from the repository root:  python tools/derive_advice.py [--source DIR] [--check]

Each piece of advice below is written here in our own words (what the pattern is, what to use
instead, when it applies, what it gains); the *facts* that back it are looked up in the Ascend
support data, per release, and recorded with where they came from:

- a torch_npu fused operator (``torch_npu.npu_rms_norm``...) is advised for a release only when that
  release's NPU-only operator list (``aten_ops/npu_custom_ops_*``, the nearest release's list where
  a release has none, as tools/ascend_releases.py pairs them) names it;
- a fused optimizer only where the CUDA -> NPU mapping table pairs the PyTorch optimizer with it
  (``doc:fused_optimizer`` rows, from torch_npu's optimizer docs; that table is not per release);
- float64 advice only for a release whose native API list gives dtypes for torch.matmul without fp64;
- compile-mode advice only for a release whose `torch.npu` `__all__` list (``torch_npu_module/``,
  the nearest release's where a release has none) names ``set_compile_mode``;
- the task-queue setting from the porting guide's environment-variable section;
- the data loader, DDP and anomaly-detection settings from msFmkTransplt's own performance advice
  file, the upstream `repository@commit:path` the mapping table names for it.
Nothing upstream is copied but names and values.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from ascend_releases import Release, version_key
from ascend_releases import releases as ascend_releases

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "ms_fmk_transplt" / "data" / "advice.json"
GUIDE = ROOT.parent / "shared" / "reference" / "ascend_pytorch_porting_guide.md"

# Our words; `fact` says which kind of evidence each needs (the derivation below looks it up).
ADVICE = [
    {
        "id": "AF101",
        "pattern": "rms_norm",
        "found": "hand-written RMSNorm: x * rsqrt(mean(x^2) + eps) * weight",
        "replacement": "torch_npu.npu_rms_norm",
        "condition": "normalised over the last dimension(s), with the weight of those dimensions;"
        " float16, bfloat16 or float32 input; returns (y, rstd): take [0]",
        "gain": "one fused kernel forward and one backward instead of six element-wise operators",
        "fact": {"custom_op": "npu_rms_norm"},
    },
    {
        "id": "AF102",
        "pattern": "rotary",
        "found": "hand-written rotary embedding: x * cos + rotate_half(x) * sin",
        "replacement": "torch_npu.npu_rotary_mul",
        "condition": "x, cos and sin of 4 dimensions with an even last dimension, cos and sin"
        " broadcastable to x; rotate_half by halves is rotary_mode='half', by pairs 'interleave'",
        "gain": "one fused kernel instead of a split, a negation, a concatenation and two multiply-adds",
        "fact": {"custom_op": "npu_rotary_mul"},
    },
    {
        "id": "AF106",
        "pattern": "rotary_complex",
        "found": "rotary embedding as a complex product: view_as_complex(x) * freqs_cis",
        "replacement": "torch_npu.npu_rotary_mul",
        "condition": "rewritten by hand, not by --opt-in affinity: the complex pairs are adjacent"
        " elements, so it is rotary_mode='interleave' with cos and sin the real and imaginary parts of"
        " freqs_cis each repeated twice along the last dimension (repeat_interleave(2, -1)), x and them"
        " 4-dimensional in one dtype; the mode argument exists only in the releases that document it",
        "gain": "one fused kernel instead of a float cast, two views, a complex multiply and a cast back",
        "fact": {"custom_op": "npu_rotary_mul"},
    },
    {
        "id": "AF103",
        "pattern": "swiglu",
        "found": "hand-written SwiGLU: silu(a) * b",
        "replacement": "torch_npu.npu_swiglu",
        "condition": "a and b the two halves of one tensor along one dimension (fuse the gate and up"
        " projections into one Linear and split its output); float16, bfloat16 or float32",
        "gain": "one fused kernel forward and backward, the activation not kept in memory twice",
        "fact": {"custom_op": "npu_swiglu"},
    },
    {
        "id": "AF104",
        "pattern": "attention",
        "found": "hand-written attention: softmax(q @ k.transpose(-2, -1) * scale) @ v",
        "replacement": "torch_npu.npu_fusion_attention",
        "condition": "q, k and v in layout BSH, SBH, BSND or BNSD; float16 or bfloat16; a mask as a"
        " boolean tensor with True = masked out (or sparse_mode 2/3 for causal); scale passed"
        " explicitly; returns a tuple: take [0]",
        "gain": "flash-style attention: the S x S score matrix is never written to device memory",
        "fact": {"custom_op": "npu_fusion_attention"},
    },
    {
        "id": "AF105",
        "pattern": "sdpa",
        "found": "torch.nn.functional.scaled_dot_product_attention",
        "replacement": "torch_npu.npu_fusion_attention",
        "condition": "inputs in float16 or bfloat16, layout BNSD (SDPA's) with head_num = N;"
        " attn_mask inverted (True = masked out), is_causal as sparse_mode=2; returns a tuple: take [0]",
        "gain": "the NPU's fused attention kernel, its backward included, without SDPA's dispatch",
        "fact": {"custom_op": "npu_fusion_attention"},
    },
    {
        "id": "AF201",
        "pattern": "optimizer",
        "api": "torch.optim.AdamW",
        "found": "torch.optim.AdamW",
        "replacement": "torch_npu.optim.NpuFusedAdamW",
        "condition": "every parameter on the NPU; the same hyper-parameters; the flattened state"
        " takes more device memory",
        "gain": "the per-parameter updates of a step fused into a few kernels",
        "fact": {"mapping": "torch.optim.AdamW"},
    },
    {
        "id": "AF202",
        "pattern": "optimizer",
        "api": "torch.optim.Adam",
        "found": "torch.optim.Adam",
        "replacement": "torch_npu.optim.NpuFusedAdam",
        "condition": "every parameter on the NPU; the same hyper-parameters; the flattened state"
        " takes more device memory",
        "gain": "the per-parameter updates of a step fused into a few kernels",
        "fact": {"mapping": "torch.optim.Adam"},
    },
    {
        "id": "AF203",
        "pattern": "optimizer",
        "api": "torch.optim.SGD",
        "found": "torch.optim.SGD",
        "replacement": "torch_npu.optim.NpuFusedSGD",
        "condition": "every parameter on the NPU; the same hyper-parameters",
        "gain": "the per-parameter updates of a step fused into a few kernels",
        "fact": {"mapping": "torch.optim.SGD"},
    },
    {
        "id": "AF204",
        "pattern": "optimizer",
        "api": "torch.optim.RMSprop",
        "found": "torch.optim.RMSprop",
        "replacement": "torch_npu.optim.NpuFusedRMSprop",
        "condition": "every parameter on the NPU; the same hyper-parameters",
        "gain": "the per-parameter updates of a step fused into a few kernels",
        "fact": {"mapping": "torch.optim.RMSprop"},
    },
    {
        "id": "AF205",
        "pattern": "optimizer",
        "api": "torch.optim.Adadelta",
        "found": "torch.optim.Adadelta",
        "replacement": "torch_npu.optim.NpuFusedAdadelta",
        "condition": "every parameter on the NPU; the same hyper-parameters",
        "gain": "the per-parameter updates of a step fused into a few kernels",
        "fact": {"mapping": "torch.optim.Adadelta"},
    },
    {
        "id": "AF301",
        "pattern": "loader_pin_memory",
        "found": "DataLoader without pin_memory=True",
        "replacement": "pin_memory=True",
        "condition": "batches are copied to the NPU each step (not already on the device)",
        "gain": "host-to-device copies from page-locked memory, asynchronous with non_blocking=True",
        "fact": {"msfmktransplt": "torch.utils.data.DataLoader pin_memory: expected True"},
    },
    {
        "id": "AF302",
        "pattern": "loader_workers",
        "found": "DataLoader with num_workers 0 (the default)",
        "replacement": "num_workers > 0",
        "condition": "the dataset does its decoding or augmentation in Python, per sample",
        "gain": "batches prepared in worker processes while the NPU computes",
        "fact": {"msfmktransplt": "torch.utils.data.DataLoader num_workers: unexpected 0"},
    },
    {
        "id": "AF303",
        "pattern": "ddp_bucket",
        "found": "DistributedDataParallel without bucket_cap_mb",
        "replacement": "bucket_cap_mb=500",
        "condition": "data-parallel training over HCCL; the default is 25 MB",
        "gain": "fewer, larger gradient all-reduces per step",
        "fact": {"msfmktransplt": "torch.nn.parallel.DistributedDataParallel bucket_cap_mb: expected 500"},
    },
    {
        "id": "AF304",
        "pattern": "anomaly",
        "found": "autograd anomaly detection left on",
        "replacement": "remove it (or set_detect_anomaly(False)) outside debugging",
        "condition": "a training run, not a debugging session",
        "gain": "no per-operator checks and stack traces recorded in every backward pass",
        "fact": {"msfmktransplt": "torch.autograd.set_detect_anomaly / detect_anomaly: remove for speed"},
    },
    {
        "id": "AF305",
        "pattern": "float64",
        "found": "float64 tensors",
        "replacement": "torch.float32",
        "condition": "the values fit float32's range and precision (sums of many terms may need care)",
        "gain": "the NPU's matrix units compute float16, bfloat16 and float32; float64 runs on slow"
        " paths or not at all",
        "fact": {"no_fp64": "torch.matmul"},
    },
    {
        "id": "AF306",
        "pattern": "host_sync_item",
        "found": ".item() on every training step",
        "replacement": "keep the value on the device; read it every N steps",
        "condition": "called unconditionally in a loop that calls backward() or step()",
        "gain": "no device-to-host synchronisation per step: the host keeps queuing work",
        "fact": {"guide": "Copy Bottleneck Optimization"},
    },
    {
        "id": "AF307",
        "pattern": "host_sync_cpu",
        "found": ".cpu() on every training step",
        "replacement": "keep the tensor on the device; copy it every N steps",
        "condition": "called unconditionally in a loop that calls backward() or step()",
        "gain": "no device-to-host copy and synchronisation per step",
        "fact": {"guide": "Copy Bottleneck Optimization"},
    },
    {
        "id": "AF308",
        "pattern": "compile_mode",
        "found": "set_compile_mode(jit_compile=True): operators compiled online",
        "replacement": "torch_npu.npu.set_compile_mode",
        "condition": "called with jit_compile=False, the NPU's precompiled binary operators installed"
        " (Atlas A2 and later); an operator with no binary is still compiled",
        "gain": "no operator compiled online at the first use of each new shape",
        "fact": {"npu_module": "set_compile_mode"},
    },
    {
        "id": "AF309",
        "pattern": "task_queue",
        "found": "TASK_QUEUE_ENABLE set to 0 in the script",
        "replacement": "TASK_QUEUE_ENABLE=1, the porting guide's setting for training",
        "condition": "a training run; 0 is for locating an operator error, whose message the queue"
        " otherwise reports late",
        "gain": "operators handed to the device by a second thread while Python runs ahead",
        "fact": {"guide": "Common Environment Variables"},
    },
]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _custom_ops(source: Path, release: Release) -> tuple[str, set[str]]:
    name = release.aten_ops.file.replace("npu_aten_ops_", "npu_custom_ops_")
    text = (source / "aten_ops" / name).read_text(encoding="utf-8")
    return f"ascend-data/aten_ops/{name}", {line.split(".")[0] for line in text.split()}


def _msfmktransplt_source(mapping: list[dict[str, str]]) -> str:
    """The upstream file of msFmkTransplt's performance advice, as the mapping table names it."""
    sources = {r["source"] for r in mapping if r["kind"] == "msfmktransplt:performance_advice"}
    if len(sources) != 1:
        raise SystemExit(f"expected one msFmkTransplt performance-advice source, found {sorted(sources)}")
    return sources.pop()


def _guide_section(title: str) -> str:
    """A section of the porting guide, checked to exist."""
    if GUIDE.is_file() and f"# {title}" not in GUIDE.read_text(encoding="utf-8"):
        raise SystemExit(f"{GUIDE}: no section {title!r}")
    return f"Ascend PyTorch porting guide (shared/reference/{GUIDE.name}), section {title!r}"


def _evidence(
    fact: dict[str, str], source: Path, release: Release, mapping: list[dict[str, str]]
) -> str | None:
    """What backs `fact` for `release`, or None when the data does not back it there."""
    if "custom_op" in fact:
        where, ops = _custom_ops(source, release)
        op = fact["custom_op"]
        return f"{where} lists {op}" if op in ops else None
    if "mapping" in fact:
        rows = [r for r in mapping if r["cuda_api"] == fact["mapping"] and r["kind"] == "doc:fused_optimizer"]
        return f"ascend-data/mappings/cuda_to_npu_api_mapping.csv <- {rows[0]['source']}" if rows else None
    if "no_fp64" in fact:
        if release.native is None:
            return None
        api = fact["no_fp64"]
        row = next((r for r in _rows(source / "api_support" / release.native) if r["api_name"] == api), None)
        if row is None or not row["dtypes"] or "fp64" in row["dtypes"].split():
            return None
        return f"ascend-data/api_support/{release.native}: {api} dtypes {row['dtypes']} (no fp64)"
    if "npu_module" in fact:
        where = f"ascend-data/torch_npu_module/{release.module.file}"
        names = set((source / "torch_npu_module" / release.module.file).read_text(encoding="utf-8").split())
        if fact["npu_module"] not in names:
            return None
        borrowed = (
            f" (the nearest release's list, {release.module.torch})"
            if release.module.torch != release.torch
            else ""
        )
        return f"{where} lists torch.npu.{fact['npu_module']}{borrowed}"
    if "msfmktransplt" in fact:
        return f"{_msfmktransplt_source(mapping)} ({fact['msfmktransplt']})"
    return _guide_section(fact["guide"])


def derive(source: Path) -> dict:
    """The catalogue: every piece of advice with, per release, the fact that backs it there."""
    mapping = _rows(source / "mappings" / "cuda_to_npu_api_mapping.csv")
    releases = ascend_releases(source)
    entries = []
    for advice in ADVICE:
        evidence = {}
        for release in releases:
            found = _evidence(advice["fact"], source, release, mapping)
            if found is not None:
                evidence[release.torch] = found
        if "mapping" in advice["fact"]:
            pairs = {(r["cuda_api"], r["npu_api"]) for r in mapping if r["kind"] == "doc:fused_optimizer"}
            if (advice["api"], advice["replacement"]) not in pairs:
                raise SystemExit(f"{advice['id']}: the mapping table does not pair {advice['api']} with it")
        entry = {k: v for k, v in advice.items() if k != "fact"}
        entry["evidence"] = evidence
        entries.append(entry)
    return {
        "about": "Derived by tools/derive_advice.py from shared/ascend-data; do not edit by hand.",
        "releases": sorted((r.torch for r in releases), key=version_key),
        "advice": entries,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "ascend-data")
    parser.add_argument("--check", action="store_true", help="fail if the committed data is stale")
    args = parser.parse_args()
    text = json.dumps(derive(args.source), indent=1, ensure_ascii=False) + "\n"
    if args.check:
        stale = not TARGET.is_file() or TARGET.read_text(encoding="utf-8") != text
        raise SystemExit(f"{TARGET.relative_to(ROOT)} stale: run tools/derive_advice.py" if stale else 0)
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(text)} characters)")


if __name__ == "__main__":
    main()
