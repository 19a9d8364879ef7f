"""Checkpoints as a GPU machine writes them, made without a GPU.

`torch.save` and `torch.jit.save` record, for every storage, the device it lived on as a string
in the archive's pickles (`"cpu"`, `"cuda:0"`, `"npu:0"`: the location tag of the persistent id),
and `torch.load` / `torch.jit.load` put each storage back there unless `map_location` says
otherwise. `retag` rewrites those strings in a saved archive, so that a file saved on the CPU
reads back exactly as one saved on `cuda:0` does: a machine without CUDA refuses it.
"""

from __future__ import annotations

import os
import pickletools
import struct
import zipfile
from pathlib import Path
from typing import Any

_STRINGS = {"SHORT_BINUNICODE": 2, "BINUNICODE": 5}  # opcode name -> header bytes


def _retag_pickle(data: bytes, old: str, new: str) -> tuple[bytes, int]:
    """`data` with every pickled string `old` replaced by `new`, and how many there were."""
    out: list[bytes] = []
    last = count = 0
    for op, arg, pos in pickletools.genops(data):
        if arg != old or op.name not in _STRINGS or pos is None:
            continue
        encoded = new.encode()
        length = bytes([len(encoded)]) if op.name == "SHORT_BINUNICODE" else struct.pack("<I", len(encoded))
        out += [data[last:pos], op.code.encode("latin-1"), length, encoded]
        last = pos + _STRINGS[op.name] + len(old.encode())
        count += 1
    out.append(data[last:])
    return b"".join(out), count


def retag(path: str | os.PathLike[str], new: str = "cuda:0", old: str = "cpu") -> None:
    """Rewrite the archive at `path` so that its storages say they were saved on `new`.

    Every pickled string equal to `old` changes, so keep `old` out of the saved object's own
    strings. Raises when the archive holds no such tag (nothing would change).
    """
    source = Path(path)
    with zipfile.ZipFile(source) as archive:
        entries = [(info, archive.read(info)) for info in archive.infolist()]
    total = 0
    staged = source.with_name(source.name + ".retag")
    with zipfile.ZipFile(staged, "w", zipfile.ZIP_STORED) as archive:
        for info, data in entries:
            if info.filename.endswith(".pkl"):
                data, count = _retag_pickle(data, old, new)
                total += count
            archive.writestr(info.filename, data)
    if not total:
        staged.unlink()
        raise ValueError(f"{source}: no storage tagged {old!r}")
    staged.replace(source)


def save_as_cuda(obj: Any, path: str | os.PathLike[str], index: int = 0) -> None:
    """`torch.save(obj, path)` of CPU tensors, tagged as saved on `cuda:<index>`."""
    import torch

    torch.save(obj, path)
    retag(path, f"cuda:{index}")
