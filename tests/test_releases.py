"""Every release `-v` accepts: per-release verdicts on a small project, and one list of releases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt import data
from ms_fmk_transplt.cli import app

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "ascend-data"
RELEASES = ["2.1.0", "2.6.0", "2.7.1", "2.8.0", "2.9.0", "2.10.0", "2.11.0", "2.12.0", "2.13.0"]

PROJECT = {
    "train.py": '''"""DDP + AMP training entry point (torchrun --nproc_per_node=8 train.py)."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from data import make_loader
from model import TinyTransformer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    args = parser.parse_args()
    dist.init_process_group(backend="nccl")
    torch.cuda.set_device(args.local_rank)
    device = torch.device("cuda", args.local_rank)
    model = DDP(TinyTransformer().to(device), device_ids=[args.local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    copy_stream = torch.cpu.Stream()  # host-side prefetch
    for x, y in make_loader():
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.cuda.amp.autocast(dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    torch.cuda.synchronize()
    del copy_stream


if __name__ == "__main__":
    main()
''',
    "model.py": """import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyTransformer(nn.Module):
    def __init__(self, width: int = 32, classes: int = 10) -> None:
        super().__init__()
        self.core = nn.Transformer(d_model=width, nhead=4, num_encoder_layers=1, num_decoder_layers=1)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.core(x, x).hardshrink(0.1)
        h.acos_()  # bounded features
        return self.head(h)


def grouped_experts(tokens, weights, offsets):
    return F.scaled_grouped_mm(tokens, weights, offs=offsets)
""",
    "data.py": """import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader(batch: int = 8) -> DataLoader:
    ids = torch.randint(0, 10, (64,)).cuda()
    ids = ids.unique_consecutive()
    features = torch.randn(64, 4, 32)
    return DataLoader(TensorDataset(features, ids.cpu()), batch_size=batch, pin_memory=True)


def export_constraint():
    return torch.export.Constraint
""",
}

# APIs whose verdict differs between releases, read from the ascend-data lists (the native list,
# else msFmkTransplt's): api -> per release (status, supported dtypes, list) or None when the use
# is not an issue (supported, or absent from every list and not flagged). N: native, M: msFmkTransplt.
UNIQ, TRANSFORMER, SHRINK, ACOS = (
    "torch.Tensor.unique_consecutive",
    "torch.nn.Transformer",
    "torch.Tensor.hardshrink",
    "torch.Tensor.acos_",
)
GROUPED, STREAM, CONSTRAINT = (
    "torch.nn.functional.scaled_grouped_mm",
    "torch.cpu.Stream",
    "torch.export.Constraint",
)
NOT_LISTED = ("not-verified", "", "")
REPORT = ("--report-format", "json", "--report")
EXPECTED: dict[str, dict[str, tuple[str, str, str] | None]] = {
    "2.1.0": {
        UNIQ: ("unsupported", "", "M"),
        TRANSFORMER: None,  # supported
        SHRINK: None,  # supported
        ACOS: ("partial", "fp16 fp32 int64 bool", "N"),
        GROUPED: NOT_LISTED,
        STREAM: NOT_LISTED,
        CONSTRAINT: ("unsupported", "", "M"),
    },
    "2.6.0": {
        UNIQ: ("unsupported", "", "M"),
        TRANSFORMER: ("partial", "", "M"),
        SHRINK: ("partial", "", "M"),
        ACOS: ("partial", "", "M"),
        GROUPED: NOT_LISTED,
        STREAM: None,
        CONSTRAINT: ("unsupported", "", "M"),
    },
    "2.7.1": {
        UNIQ: ("partial", "fp16 fp32 fp64 uint8 int8 int16 int32 int64 bool", "N"),  # elsewhere unsupported
        TRANSFORMER: ("partial", "fp16 fp32", "N"),
        SHRINK: ("partial", "fp16 fp32", "N"),
        ACOS: ("partial", "fp16 fp32", "N"),
        GROUPED: NOT_LISTED,
        STREAM: None,
        CONSTRAINT: ("unsupported", "", "N"),
    },
    "2.8.0": {
        UNIQ: ("unsupported", "", "M"),
        TRANSFORMER: ("unsupported", "", "M"),  # msFmkTransplt's 2.8 list alone calls it unsupported
        SHRINK: ("partial", "", "M"),
        ACOS: ("partial", "", "M"),
        GROUPED: NOT_LISTED,
        STREAM: None,
        CONSTRAINT: None,
    },
    "2.9.0": {
        UNIQ: ("unsupported", "", "N"),
        TRANSFORMER: ("partial", "fp16 fp32", "N"),
        SHRINK: ("partial", "fp16 fp32", "N"),
        ACOS: ("partial", "fp16 fp32", "N"),
        GROUPED: NOT_LISTED,
        STREAM: None,
        CONSTRAINT: None,
    },
    "2.10.0": {
        UNIQ: ("unsupported", "", "N"),
        TRANSFORMER: ("partial", "fp16 fp32", "N"),
        SHRINK: ("partial", "bf16 fp16 fp32", "N"),  # 2.10.0's list alone adds bf16
        ACOS: ("partial", "fp16 fp32", "N"),
        GROUPED: ("partial", "", "N"),
        STREAM: None,
        CONSTRAINT: None,
    },
    "2.11.0": {
        UNIQ: ("unsupported", "", "N"),
        TRANSFORMER: ("partial", "fp16 fp32", "N"),
        SHRINK: ("partial", "fp16 fp32", "N"),
        ACOS: ("partial", "fp16 fp32", "N"),
        GROUPED: ("partial", "", "N"),
        STREAM: None,
        CONSTRAINT: None,
    },
    "2.12.0": {
        UNIQ: ("unsupported", "", "N"),
        TRANSFORMER: ("partial", "fp16 fp32", "N"),
        SHRINK: ("partial", "fp16 fp32", "N"),
        ACOS: ("partial", "fp16 fp32", "N"),
        GROUPED: ("partial", "", "N"),
        STREAM: NOT_LISTED,  # the 2.12.0 release list leaves it out; its master list (not used) has it
        CONSTRAINT: None,
    },
    "2.13.0": {
        UNIQ: ("unsupported", "", "N"),
        TRANSFORMER: ("partial", "fp16 fp32", "N"),
        SHRINK: ("partial", "fp16 fp32", "N"),
        ACOS: ("partial", "fp16 fp32 fp64 bf16", "N"),  # the master docs list more dtypes
        GROUPED: ("partial", "", "N"),
        STREAM: None,
        CONSTRAINT: None,
    },
}


def _list_name(code: str, release: str) -> str:
    return {"N": f"PyTorch {release} support list", "M": f"MsFmkTransplt's PyTorch {release} list", "": ""}[
        code
    ]


def test_every_release_has_an_expectation() -> None:
    assert data.releases() == RELEASES == list(EXPECTED)
    assert data.default_release() == RELEASES[-1]


@pytest.mark.parametrize("release", RELEASES)
def test_conversion_reports_the_selected_releases_verdicts(release: str, tmp_path: Path) -> None:
    source = tmp_path / "proj"
    source.mkdir()
    for name, text in PROJECT.items():
        (source / name).write_text(text)
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "-i",
            str(source),
            "-o",
            str(tmp_path / "out"),
            "-v",
            release,
            "-q",
            "--no-cache",
            *REPORT,
            str(report),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    converted = (tmp_path / "out" / "proj_msft" / "train.py").read_text()
    assert "torch_npu" in converted and "hccl" in converted and "torch.cuda" not in converted
    document = json.loads(report.read_text())
    assert document["release"] == release
    issues = document["issues"]
    found = {i["api"]: (i["status"], i.get("supported_dtypes", ""), i["source"]) for i in issues}
    for api, want in EXPECTED[release].items():
        if want is None:
            assert api not in found, f"{release}: {api} reported as {found.get(api)}"
            continue
        status, dtypes, code = want
        got = found.get(api)
        assert got is not None, f"{release}: {api} not reported"
        assert got[:2] == (status, dtypes), f"{release}: {api}"
        if code:
            assert got[2] == _list_name(code, release), f"{release}: {api}"
        else:
            assert got[2].startswith("no list entry"), f"{release}: {api}: {got[2]}"
    # every verdict taken from a list names this release's list, never another release's
    listed = [
        i["source"] for i in issues if i["rule"] in ("TP901", "TP902") and i["source"].endswith(" list")
    ]
    others = [v for v in RELEASES if v != release]
    assert listed and all(f" {release} " in s and not any(f" {v} " in s for v in others) for s in listed)


def test_runtime_shim_accepts_the_same_releases() -> None:
    """RUNTIME_SHIM_RELEASE and -v know the same releases and default, and check the same operator list."""
    from runtime_shim.diagnostics import opcheck

    runtime = opcheck.available_releases()
    assert sorted(runtime, key=lambda v: tuple(map(int, v.split(".")))) == data.releases()
    assert opcheck.load_release().torch == data.default_release()
    for version in data.releases():
        entry = opcheck.load_release(version).provenance
        aten_file = data.release(version)["provenance"]["aten_ops"][0].rsplit("/", 1)[1]
        assert entry["source_file"].endswith("/" + aten_file), version


#: the one schema of the two releases.json (the converter's and runtime_shim's): the same top level,
#: one entry per release keyed by its torch version, oldest first, the default the newest
RELEASES_SCHEMA = {
    "type": "object",
    "required": ["about", "default", "releases"],
    "additionalProperties": False,
    "properties": {
        "about": {"type": "string", "pattern": "^Derived by tools/derive_\\w+\\.py from shared/ascend-data"},
        "default": {"type": "string"},
        "releases": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "object", "required": ["torch"], "properties": {"torch": {"type": "string"}}},
        },
    },
}


@pytest.mark.parametrize("package", ["ms_fmk_transplt", "runtime_shim"])
def test_both_release_indexes_have_one_schema(package: str) -> None:
    import jsonschema

    index = json.loads((ROOT / package / "data" / "releases.json").read_text(encoding="utf-8"))
    jsonschema.validate(index, RELEASES_SCHEMA)
    versions = [entry["torch"] for entry in index["releases"]]
    assert versions == RELEASES  # oldest first, each once
    assert index["default"] == versions[-1]


def test_readme_lists_every_release() -> None:
    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `-v, --version` |"))
    assert row.count("`2.") == len(data.releases()) and all(f"`{v}`" in row for v in data.releases())
    shim = next(line for line in readme.splitlines() if line.startswith("| `RUNTIME_SHIM_RELEASE` |"))
    assert f"`{data.default_release()}`" in shim


def test_each_release_records_where_its_borrowed_lists_come_from() -> None:
    for version in data.releases():
        provenance = data.release(version)["provenance"]
        for key in ("aten_ops", "torch.npu", "torch.npu.amp"):
            own = f"_torch{version}_" in provenance[key][0] or f"-pytorch{version}.txt" in provenance[key][0]
            assert own or f"no list for {version} in ascend-data" in provenance[key][1], (version, key)
    master = data.release("2.13.0")["provenance"]["api_support"]
    assert master[0].endswith("pytorch_native_api_support_2.13.0_master.csv") and "master" in master[1]
    assert data.release("2.13.0")["torch_npu"] is None and data.release("2.9.0")["torch_npu"] == "26.1.0"
    # where a version has a release list and a master list, the release list wins
    assert data.release("2.12.0")["provenance"]["api_support"][0].endswith("_2.12.0.csv")


def _policy():  # tools/ is not a package: load the module the derive scripts share
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import ascend_releases
    finally:
        sys.path.remove(str(ROOT / "tools"))
    return ascend_releases


def test_nearest_release_prefers_the_closest_then_the_older() -> None:
    nearest = _policy().nearest
    have = ["2.1.0", "2.7.1", "2.12.0"]
    assert [nearest(v, have) for v in ("2.6.0", "2.9.0", "2.10.0", "2.13.0", "2.7.1")] == [
        "2.7.1", "2.7.1", "2.12.0", "2.12.0", "2.7.1"
    ]  # fmt: skip
    assert nearest("2.4.0", ["2.2.0", "2.6.0"]) == "2.2.0"  # a tie goes to the older one


def test_release_policy_on_a_small_data_tree(tmp_path: Path) -> None:
    for folder, names in {
        "api_support": [
            "pytorch_native_api_support_2.5.0.csv",
            "pytorch_native_api_support_2.5.0_master.csv",
            "pytorch_native_api_support_2.6.0_master.csv",
            "msfmktransplt_api_support_2.4.0.csv",
        ],
        "aten_ops": ["npu_aten_ops_torch2.5.0_torchnpu7.0.0.txt"],
        "torch_npu_module": ["torch_npu_npu_all_v7.0.0-pytorch2.5.0.txt", "torch_npu_npu_all_master.txt"],
    }.items():
        (tmp_path / folder).mkdir()
        for name in names:
            (tmp_path / folder / name).write_text("")
    releases = {r.torch: r for r in _policy().releases(tmp_path)}
    assert list(releases) == ["2.4.0", "2.5.0", "2.6.0"]
    assert releases["2.5.0"].native == "pytorch_native_api_support_2.5.0.csv"  # release beats master
    assert releases["2.6.0"].native_is_master and releases["2.4.0"].native is None
    assert releases["2.4.0"].msfmktransplt == "msfmktransplt_api_support_2.4.0.csv"
    assert {r.aten_ops.torch for r in releases.values()} == {"2.5.0"}
    assert (
        releases["2.6.0"].module.file == "torch_npu_npu_all_v7.0.0-pytorch2.5.0.txt"
    )  # master is no version


@pytest.mark.skipif(
    not SHARED_DATA.is_dir(),
    reason=f"{SHARED_DATA} (the source of the shipped release data) is not on this machine",
)
def test_shipped_converter_data_is_derived_from_shared_ascend_data() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "derive_converter_data.py"),
            "--source",
            str(SHARED_DATA),
            "--check",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
