#!/usr/bin/env python3
"""Derive runtime_shim's package data from the shared Ascend support data.

Writes into ``runtime_shim/data/``:

* ``npu_ops_torch<T>_torchnpu<N>.txt``: the ATen operators torch_npu registers an
  NPU kernel for in that release, one ``name.overload`` per line, under a
  ``#`` header giving the source file and the ``repository@commit`` it came from;
* ``npu_dtypes_torch<T>.txt``: per ATen operator name, the dtypes the release's API
  support docs list for it (``mm fp16 fp32``): the union over the Python spellings that
  reach it (``torch.X``, ``torch.Tensor.X``, ``torch.nn.functional.X``, ``torch.linalg.X``
  as ``linalg_X``, ...), rows with no dtype cell left out;
* ``releases.json``: one entry per release (oldest first; the schema of the converter's), the same releases as the converter's
  (tools/ascend_releases.py): a release without its own operator list uses the nearest
  release's, and its entry says so (``ops_torch``, ``ops_from``);
* ``npu_api_names.json``: ``__all__`` of ``torch_npu.npu`` and ``torch_npu.npu.amp``
  per release, with provenance.

Run from the repository root:
    python tools/derive_runtime_data.py [--source ../shared/ascend-data]
Re-running on unchanged input rewrites identical files.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

from ascend_releases import Release, version_key
from ascend_releases import releases as ascend_releases

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "ascend-data"
OUT_DIR = ROOT / "runtime_shim" / "data"

API_FILE = re.compile(r"torch_npu_npu_(?P<kind>all|amp_all)_(?P<tag>master|v[\d.]+-pytorch[\d.]+)\.txt$")
TORCH_NPU_SOURCE = re.compile(r"(?P<repo>Ascend/pytorch)@(?P<commit>[0-9a-f]+)\((?P<tag>[^)]+)\)")
OP_PLUGIN_SOURCE = re.compile(r"(?P<repo>Ascend/op-plugin)@(?P<commit>[0-9a-f]+)")


def collect_commits(source: Path) -> tuple[dict[str, str], str | None]:
    """Map torch_npu release tags to ``repo@commit`` from the CSV rows' source column,
    and find the op-plugin ``repo@commit`` the rows cite."""
    tags: dict[str, str] = {}
    op_plugin: str | None = None
    for path in sorted(source.rglob("*.csv")):
        with path.open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                cell = row.get("source") or ""
                for match in TORCH_NPU_SOURCE.finditer(cell):
                    tags.setdefault(match["tag"], f"{match['repo']}@{match['commit']}")
                match = OP_PLUGIN_SOURCE.search(cell)
                if match and op_plugin is None:
                    op_plugin = f"{match['repo']}@{match['commit']}"
    return tags, op_plugin


def read_names(path: Path) -> list[str]:
    """Non-empty, non-comment lines of a list file, sorted and de-duplicated."""
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return sorted({line for line in lines if line and not line.startswith("#")})


# Python API prefix -> ATen name prefix of the operator it dispatches.
_API_PREFIXES = (
    ("torch.Tensor.", ""),
    ("torch.nn.functional.", ""),
    ("torch.linalg.", "linalg_"),
    ("torch.special.", "special_"),
    ("torch.fft.", "fft_"),
    ("torch.", ""),
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def dtype_table(csv_path: Path) -> tuple[dict[str, set[str]], str]:
    """ATen name -> dtypes listed for it in one API support CSV; and the CSV's cited source."""
    table: dict[str, set[str]] = {}
    cited = ""
    with csv_path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            dtypes = (row.get("dtypes") or "").split()
            if not dtypes or row.get("supported") == "no":
                continue
            api = row["api_name"]
            for prefix, aten_prefix in _API_PREFIXES:
                if api.startswith(prefix):
                    rest = api[len(prefix) :]
                    if _IDENTIFIER.match(rest):
                        table.setdefault(aten_prefix + rest, set()).update(dtypes)
                        match = TORCH_NPU_SOURCE.search(row.get("source") or "")
                        if match and not cited:
                            cited = f"{match['repo']}@{match['commit']}({match['tag']})"
                    break
    return table, cited


def write_dtypes(source: Path, out_dir: Path, release: Release) -> tuple[Path, dict[str, str]] | None:
    """Write ``npu_dtypes_torch<T>.txt`` for one release; None when it has no native list or
    its docs give no dtypes (msFmkTransplt's lists have no dtype column)."""
    torch_version = release.torch
    if release.native is None:
        return None
    csv_path = source / "api_support" / release.native
    table, cited = dtype_table(csv_path)
    if not table:
        return None
    name = f"npu_dtypes_torch{torch_version}.txt"
    provenance = {
        "dtypes_file": name,
        "dtypes_source_file": f"shared/ascend-data/api_support/{csv_path.name}",
        "dtypes_docs_source": f"{cited}:docs (API support tables, dtype column)" if cited else "unknown",
    }
    header = [
        "# Dtypes the torch_npu API support docs list per ATen operator name, derived by",
        "# tools/derive_runtime_data.py (do not edit). Union over the Python spellings of an op.",
        f"# release: torch {torch_version}",
        f"# source file: {provenance['dtypes_source_file']}",
        f"# docs: {provenance['dtypes_docs_source']}",
        f"# operators: {len(table)}",
    ]
    lines = [f"{op} {' '.join(sorted(dtypes))}" for op, dtypes in sorted(table.items())]
    target = out_dir / name
    target.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    return target, provenance


def derive(source: Path, out_dir: Path) -> list[Path]:
    """Write all derived files; return their paths."""
    tags, op_plugin = collect_commits(source)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    releases = []
    for release in ascend_releases(source):
        torch_version, borrowed = release.torch, release.aten_ops
        tag = f"v{borrowed.torch_npu}-pytorch{borrowed.torch}"
        torch_npu_commit = tags.get(tag, "unknown (no row of the shared data cites this tag)")
        name = f"npu_ops_torch{borrowed.torch}_torchnpu{borrowed.torch_npu}.txt"
        provenance = {
            "source_file": f"shared/ascend-data/aten_ops/{borrowed.file}",
            "torch_npu_source": f"{torch_npu_commit}({tag}):torch_npu/csrc/aten/npu_native_functions.yaml",
            "op_plugin_source": f"{op_plugin}:op_plugin/config/op_plugin_functions.yaml"
            if op_plugin
            else "unknown",
        }
        ops = read_names(source / "aten_ops" / borrowed.file)
        target = out_dir / name
        if target not in written:  # one file serves every release that borrows it
            header = [
                "# NPU ATen operator list, derived by tools/derive_runtime_data.py (do not edit).",
                f"# release: torch {borrowed.torch} / torch_npu {borrowed.torch_npu}",
                f"# source file: {provenance['source_file']}",
                f"# torch_npu: {provenance['torch_npu_source']}",
                f"# op-plugin: {provenance['op_plugin_source']} (commit as cited by the shared data rows)",
                "# caveats: CompositeImplicitAutograd ops are not listed (they decompose);",
                "#   _foreach_* ops not listed run through generic per-tensor kernels.",
                f"# operators: {len(ops)}",
            ]
            target.write_text("\n".join(header + ops) + "\n", encoding="utf-8")
            written.append(target)
        dtypes = write_dtypes(source, out_dir, release)
        if dtypes is not None:
            written.append(dtypes[0])
            provenance = {**provenance, **dtypes[1]}
        else:
            provenance["dtypes_source_file"] = f"none: no native API support list for {torch_version}"
        releases.append(
            {
                "torch": torch_version,
                "torch_npu": borrowed.torch_npu,
                "ops_torch": borrowed.torch,
                "ops_from": borrowed.note("operators", torch_version),
                "file": name,
                "count": len(ops),
                **provenance,
            }
        )
    releases.sort(key=lambda r: version_key(r["torch"]))
    index = out_dir / "releases.json"
    index.write_text(
        json.dumps(
            {  # the schema of the converter's releases.json (tests/test_releases.py)
                "about": "Derived by tools/derive_runtime_data.py from shared/ascend-data; do not edit by hand.",
                "default": releases[-1]["torch"],
                "releases": releases,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    written.append(index)

    api: dict[str, dict[str, list[str]]] = {"all": {}, "amp_all": {}}
    api_sources: dict[str, str] = {}
    for path in sorted((source / "torch_npu_module").glob("torch_npu_npu_*.txt")):
        match = API_FILE.search(path.name)
        if not match:
            continue
        tag = match["tag"]
        key = tag.removeprefix("v")
        api[match["kind"]][key] = read_names(path)
        commit = tags.get(tag, "unknown")
        api_sources[key] = f"{commit}({tag}):torch_npu/npu/__init__.py"
    names_file = out_dir / "npu_api_names.json"
    names_file.write_text(
        json.dumps(
            {
                "_generated_by": "tools/derive_runtime_data.py",
                "_source_files": "shared/ascend-data/torch_npu_module/torch_npu_npu_*.txt",
                "_provenance": api_sources,
                "releases": api["all"],
                "amp": api["amp_all"],
            },
            indent=2,
            sort_keys=False,
        )
        + "\n",
        encoding="utf-8",
    )
    written.append(names_file)
    return written


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="shared ascend-data directory")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    args = parser.parse_args(argv)
    if not (args.source / "aten_ops").is_dir():
        print(f"error: {args.source} has no aten_ops/ directory", file=sys.stderr)
        return 2
    for path in derive(args.source, args.out):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
