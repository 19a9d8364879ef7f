"""Ascend release data shipped with the package (see tools/derive_converter_data.py)."""

from __future__ import annotations

import json
import re
from functools import cache, lru_cache
from importlib import resources
from typing import Any

# Names a rule's `members_from` may use, and the key of the list inside a release.
MEMBER_LISTS = {"torch.npu": "torch.npu", "torch.npu.amp": "torch.npu.amp"}


def _load(name: str) -> Any:
    return json.loads(resources.files(__name__).joinpath(name).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _index() -> dict[str, Any]:
    """releases.json: the releases, the default and their lists, without any release's data."""
    return _load("releases.json")


def releases() -> list[str]:
    """PyTorch versions the shipped data covers, oldest first."""
    return [entry["torch"] for entry in _index()["releases"]]


def default_release() -> str:
    return str(_index()["default"])


def torch_older(release: str, needed: str) -> bool:
    """Is the PyTorch version `release` older than `needed` (dotted versions; False when either is empty)?"""

    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", text)[:3])

    return bool(release and needed) and parts(release) < parts(needed)


def release_lists(version: str) -> dict[str, str]:
    """Which ascend-data lists a release uses, one line each (the rules reference prints them)."""
    return next(dict(entry["lists"]) for entry in _index()["releases"] if entry["torch"] == version)


@cache
def release(version: str | None = None) -> dict[str, Any]:
    """The data of one release (the default when None): its own file, parsed on first use."""
    return _load(f"ascend_release_{version or default_release()}.json")


@lru_cache(maxsize=1)
def mappings() -> dict[str, Any]:
    """The CUDA -> NPU API correspondences, shared by every release, with their provenance."""
    return _load("ascend_mappings.json")


def members(list_name: str, version: str | None = None) -> list[str]:
    """The public names of a torch_npu module in a release."""
    return list(release(version)[MEMBER_LISTS[list_name]])


def torch_members(module: str) -> tuple[str, frozenset[str]]:
    """The pinned torch's version and the names of one of its torch.cuda modules (empty when the
    data does not list that module)."""
    apis = torch_device_apis()
    return str(apis["torch"]), frozenset(apis.get("members", {}).get(module, ()))


@lru_cache(maxsize=1)
def torch_device_apis() -> dict[str, Any]:
    """The torch callables that take a device (tools/derive_device_apis.py)."""
    return json.loads(
        resources.files(__name__).joinpath("torch_device_apis.json").read_text(encoding="utf-8")
    )
