"""The torch versions runtime_shim supports, and the check that enforces them."""

from __future__ import annotations

from pathlib import Path

_DATA_DIR = Path(__file__).resolve().parent / "data"


def data_file(name: str) -> Path:
    """Path of a file shipped in runtime_shim/data."""
    return _DATA_DIR / name


#: Inclusive lower and exclusive upper bound, as declared in pyproject.toml.
#: Verified on torch 2.13.0; the PrivateUse1 Python-backend hooks it relies on
#: (torch._C._acc, _setup_privateuseone_for_python_backend) first shipped in 2.6.
MIN_TORCH = (2, 6)
MAX_TORCH_EXCLUSIVE = (2, 14)
SUPPORTED = ">=2.6,<2.14"


def _parse(version: str) -> tuple[int, int]:
    parts = version.split("+", 1)[0].split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


def check_torch_version(version: str | None = None) -> None:
    """Raise RuntimeError (one line) unless torch ``version`` is supported."""
    if version is None:
        import torch

        version = torch.__version__
    found = _parse(version)
    if not MIN_TORCH <= found < MAX_TORCH_EXCLUSIVE:
        raise RuntimeError(f"runtime_shim supports torch {SUPPORTED}, found torch {version}")
