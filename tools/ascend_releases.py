"""Which ascend-data lists serve which PyTorch release: shared by the two derive scripts.

A release is a PyTorch version some API support list in ascend-data names. The ATen operator
lists and the `torch.npu` `__all__` lists exist for fewer versions: a release without its own
takes the nearest version's list (ties go to the older one) and its provenance says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_NATIVE = re.compile(r"pytorch_native_api_support_(?P<torch>[\d.]+?)(?P<master>_master)?\.csv$")
_LEGACY = re.compile(r"legacy_torch_npu_apis_(?P<torch>[\d.]+)\.csv$")
_MSFT = re.compile(r"msfmktransplt_api_support_(?P<torch>[\d.]+)\.csv$")
_ATEN = re.compile(r"npu_aten_ops_torch(?P<torch>[\d.]+)_torchnpu(?P<npu>[\d.]+)\.txt$")
_MODULE = re.compile(r"torch_npu_npu_all_v(?P<npu>[\d.]+)-pytorch(?P<torch>[\d.]+)\.txt$")
# a torch_npu release tag in a row's source cell: `Ascend/pytorch@<commit>(v26.1.0-pytorch2.7.1)`
_TAG = re.compile(r"\(v(?P<npu>[\d.]+)-pytorch[\d.]+\)")


def version_key(version: str) -> tuple[int, ...]:
    """`2.10.0` -> (2, 10, 0), so that versions sort as numbers."""
    return tuple(int(part) for part in version.split("."))


def nearest(version: str, candidates: list[str]) -> str:
    """The candidate closest to `version` (same one when present); on a tie the older one."""
    want = version_key(version)

    def distance(candidate: str) -> tuple[int, ...]:
        have = version_key(candidate)
        return (*(abs(a - b) for a, b in zip(want, have)), *have)

    return min(candidates, key=distance)


@dataclass(frozen=True)
class Borrowed:
    """A list file serving `version`; `torch` is the version it was made for."""

    file: str
    torch: str
    torch_npu: str

    def note(self, kind: str, version: str) -> str:
        """One line for the provenance: own list, or whose list and why."""
        if self.torch == version:
            return f"{kind}: the list of torch {version} / torch_npu {self.torch_npu}"
        return (
            f"{kind}: from torch {self.torch}'s torch_npu {self.torch_npu} list"
            f" (the nearest release with one); no list for {version} in ascend-data"
        )


@dataclass(frozen=True)
class Release:
    """The ascend-data files one PyTorch release is derived from."""

    torch: str
    native: str | None  # the native API support list (release list, legacy list, else master)
    msfmktransplt: str | None
    aten_ops: Borrowed
    module: Borrowed  # torch_npu.npu `__all__`; the amp file shares its suffix

    @property
    def native_is_master(self) -> bool:
        return self.native is not None and self.native.endswith("_master.csv")


def _by_torch(names: list[str], pattern: re.Pattern[str]) -> dict[str, re.Match[str]]:
    return {m["torch"]: m for name in names if (m := pattern.search(name))}


def releases(source: Path) -> list[Release]:
    """Every PyTorch version an API support list names, oldest first, with its files."""
    api = sorted(p.name for p in (source / "api_support").glob("*.csv"))
    native = {
        m["torch"]: m.string
        for m in sorted(filter(None, map(_NATIVE.search, api)), key=lambda m: bool(m["master"]), reverse=True)
    }  # the release list overwrites the master one of the same version
    native.update({t: m.string for t, m in _by_torch(api, _LEGACY).items() if t not in native})
    msft = {t: m.string for t, m in _by_torch(api, _MSFT).items()}
    aten = _by_torch(sorted(p.name for p in (source / "aten_ops").glob("*.txt")), _ATEN)
    module = _by_torch(sorted(p.name for p in (source / "torch_npu_module").glob("*.txt")), _MODULE)
    out = []
    for version in sorted(set(native) | set(msft), key=version_key):
        a = aten[nearest(version, list(aten))]
        m = module[nearest(version, list(module))]
        out.append(
            Release(
                torch=version,
                native=native.get(version),
                msfmktransplt=msft.get(version),
                aten_ops=Borrowed(a.string, a["torch"], a["npu"]),
                module=Borrowed(m.string, m["torch"], m["npu"]),
            )
        )
    return out


def paired_torch_npu(release: Release, native_sources: list[str]) -> tuple[str | None, str]:
    """The torch_npu release the data pairs with this PyTorch version, and where it says so.

    Only an operator list named for this version, or a native support list taken from one
    torch_npu release's docs, pairs them; anything else is "not in the data".
    """
    if release.aten_ops.torch == release.torch:
        return release.aten_ops.torch_npu, f"ascend-data/aten_ops/{release.aten_ops.file}"
    tags = {m["npu"] for cell in native_sources for m in _TAG.finditer(cell)}
    if release.native and not release.native_is_master and len(tags) == 1:
        (npu,) = tags
        return npu, f"ascend-data/api_support/{release.native} comes from torch_npu v{npu}'s docs"
    return None, f"not in the data: no operator list or released docs name a torch_npu for {release.torch}"
