"""Derive the converter's package data from the Ascend support data in ../shared/ascend-data.

Run from the repository root:  python tools/derive_converter_data.py [--source DIR] [--check]
Writes into ms_fmk_transplt/data/ one `ascend_release_<torch>.json` per release (the torch.npu
surface, the API support verdicts and the ATen operators torch_npu has an NPU kernel for, overloads
folded into one name), `ascend_mappings.json` (the CUDA -> NPU mappings) and `releases.json`, the
index read at every start (the releases, the default, and which lists each release uses). The
output records, for every list, the file it came from and the upstream `repository@commit:path`
sources named in that file's rows or README. Which files serve a release: tools/ascend_releases.py.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from ascend_releases import Borrowed, Release, paired_torch_npu, version_key
from ascend_releases import releases as ascend_releases

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "ms_fmk_transplt" / "data"
# One file per release, parsed only for the selected one: one document of all nine releases
# (3.4 MB) took ~48 ms to parse at every conversion, one release takes ~3 ms.
RELEASE_FILE = "ascend_release_{version}.json"
MAPPINGS = DATA / "ascend_mappings.json"
# the releases, the default and the lists each uses: read at every start (the CLI's help, -v)
INDEX = DATA / "releases.json"

ATEN_SOURCE = (
    "op-plugin op_plugin_functions.yaml (official/quant/autograd) and torch_npu npu_native_functions.yaml"
    " `supported:`, per the ascend-data README"
)
MODULE_SOURCE = (
    "Ascend/pytorch torch_npu/npu/__init__.py and torch_npu/npu/amp/__init__.py `__all__` at tag {tag}"
)


def _lines(path: Path) -> list[str]:
    return [
        line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")
    ]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _aten_names(path: Path) -> list[str]:
    """The operator names of an `name.overload` list, overloads folded: which ops have a kernel."""
    return sorted({line.split(".", 1)[0] for line in _lines(path)})


def _sources(rows: list[dict[str, str]]) -> list[str]:
    found: set[str] = set()
    for row in rows:
        for part in row.get("source", "").split(" | "):
            if part:
                found.add(part.split(":", 1)[0])
    return sorted(found)


# the lists' own words -> the report's statuses; `untested`/`unknown` say nothing definite
_STATUS = {"yes": "supported", "partial": "partial", "no": "unsupported"}


def _classify(**lists: list[dict[str, str]]) -> dict[str, list[str]]:
    """name -> [status, dtypes, list]: the first list (native, then msFmkTransplt's) with a verdict.

    A name listed twice in one list (two doc pages) keeps its most restrictive verdict.
    """
    rank = {"unsupported": 0, "partial": 1, "supported": 2}
    out: dict[str, list[str]] = {}
    for list_name, rows in lists.items():
        found: dict[str, list[str]] = {}
        for row in rows:
            status = _STATUS.get(row["supported"])
            if status is None:
                continue
            dtypes = " ".join(row.get("dtypes", "").split()) if status == "partial" else ""
            entry = [status, dtypes, list_name]
            previous = found.get(row["api_name"])
            if previous is None or rank[status] < rank[previous[0]]:
                found[row["api_name"]] = entry
        for name, entry in found.items():
            out.setdefault(name, entry)
    return dict(sorted(out.items()))


def _release(source: Path, files: Release) -> dict:
    """One release's lists and, for each, the file it came from and why that file."""
    version = files.torch
    module_dir = source / "torch_npu_module"
    npu_file = module_dir / files.module.file
    amp_file = module_dir / files.module.file.replace("npu_all_", "npu_amp_all_")
    tag = npu_file.stem.removeprefix("torch_npu_npu_all_")
    native_rows = _rows(source / "api_support" / files.native) if files.native else []
    msft_rows = _rows(source / "api_support" / files.msfmktransplt) if files.msfmktransplt else []
    native_sources = _sources(native_rows)
    torch_npu, pairing = paired_torch_npu(files, [row.get("source", "") for row in native_rows])
    if files.native is None:
        native_note = [f"no native API support list for {version} in ascend-data"]
    elif files.native_is_master:
        native_note = [
            f"ascend-data/api_support/{files.native}",
            f"master (unreleased) docs: ascend-data has no released list for {version}",
            *native_sources,
        ]
    else:
        native_note = [f"ascend-data/api_support/{files.native}", *native_sources]
    module_source = MODULE_SOURCE.format(tag=tag)
    native_summary = files.native or "none in ascend-data"
    if files.native_is_master:
        native_summary += " (master docs: no released list)"
    summary = {
        "torch_npu": torch_npu or "not in the data",
        "api_support": native_summary,
        "msfmktransplt_support": files.msfmktransplt or "none in ascend-data",
        "aten_ops": _borrowed_summary(files.aten_ops, version),
        "torch.npu": _borrowed_summary(files.module, version),
    }
    return {
        "summary": summary,
        "torch_npu": torch_npu,
        "aten_ops": _aten_names(source / "aten_ops" / files.aten_ops.file),
        "torch.npu": sorted(set(_lines(npu_file))),
        "torch.npu.amp": sorted(set(_lines(amp_file))),
        "support": _classify(api_support=native_rows, msfmktransplt_support=msft_rows),
        "provenance": {
            "torch_npu": [pairing],
            "torch.npu": [
                f"ascend-data/torch_npu_module/{npu_file.name}",
                files.module.note("torch.npu", version),
                module_source,
            ],
            "torch.npu.amp": [
                f"ascend-data/torch_npu_module/{amp_file.name}",
                files.module.note("torch.npu.amp", version),
                module_source,
            ],
            "api_support": native_note,
            "support": ["api_support then msfmktransplt_support: the first definite verdict"],
            "aten_ops": [
                f"ascend-data/aten_ops/{files.aten_ops.file}",
                files.aten_ops.note("aten_ops", version),
                ATEN_SOURCE,
            ],
            "msfmktransplt_support": (
                [f"ascend-data/api_support/{files.msfmktransplt}", *_sources(msft_rows)]
                if files.msfmktransplt
                else [f"no msFmkTransplt list for {version} in ascend-data"]
            ),
        },
    }


def _borrowed_summary(borrowed: Borrowed, version: str) -> str:
    own = f"torch {borrowed.torch} / torch_npu {borrowed.torch_npu}"
    return own if borrowed.torch == version else f"{own} (nearest; none for {version})"


def derive(source: Path) -> dict:
    """The JSON document written to the package; pure function of the source folder."""
    releases = {files.torch: _release(source, files) for files in ascend_releases(source)}
    mapping_rows = _rows(source / "mappings" / "cuda_to_npu_api_mapping.csv")
    mappings = [{"cuda_api": r["cuda_api"], "npu_api": r["npu_api"], "kind": r["kind"]} for r in mapping_rows]
    return {
        "about": "Derived by tools/derive_converter_data.py from shared/ascend-data; do not edit by hand.",
        "default_release": max(releases, key=version_key),
        "releases": releases,
        "mappings": mappings,
        "mappings_provenance": ["ascend-data/mappings/cuda_to_npu_api_mapping.csv", *_sources(mapping_rows)],
    }


def _dump(value: object) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def outputs(document: dict) -> dict[Path, str]:
    """The files to write, and their text: one per release, the mappings and the index."""
    out = {
        DATA / RELEASE_FILE.format(version=version): _dump(
            {k: v for k, v in release.items() if k != "summary"}
        )
        for version, release in document["releases"].items()
    }
    out[MAPPINGS] = _dump({k: document[k] for k in ("about", "mappings", "mappings_provenance")})
    out[INDEX] = _dump(release_index(document))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "ascend-data")
    parser.add_argument("--check", action="store_true", help="fail if the committed data is stale")
    args = parser.parse_args()
    files = outputs(derive(args.source))
    # a release file no release produces any more (or the old one-document layout) is stale too
    extra = [p for p in DATA.glob("ascend_*.json") if p not in files]
    if args.check:
        stale = [p for p, t in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != t]
        stale += extra
        raise SystemExit(
            f"{', '.join(str(p.relative_to(ROOT)) for p in stale)} stale: run tools/derive_converter_data.py"
            if stale
            else 0
        )
    for path in extra:
        path.unlink()
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    print(
        f"wrote {len(files)} files in {DATA.relative_to(ROOT)} ({sum(map(len, files.values()))} characters)"
    )


def release_index(document: dict) -> dict:
    """The shipped releases, oldest first, the default one, and the lists each release uses; the
    schema runtime_shim's releases.json shares (tests/test_releases.py)."""
    versions = sorted(document["releases"], key=version_key)
    return {
        "about": "Derived by tools/derive_converter_data.py from shared/ascend-data; do not edit by hand.",
        "default": document["default_release"],
        "releases": [
            {"torch": version, "lists": document["releases"][version]["summary"]} for version in versions
        ],
    }


if __name__ == "__main__":
    main()
