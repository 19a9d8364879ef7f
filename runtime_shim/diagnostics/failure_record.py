"""The exception that ends a process of a ``ms_fmk_transplt verify`` run, kept beside its step records.

Under torchrun or ``mp.spawn`` the launcher's own summary is the last thing on stderr, and the
rank's exception is lost above it (or interleaved with the other ranks'). With
``RUNTIME_SHIM_RECORD=DIR`` the boot ``sitecustomize`` calls ``install()``, which chains a
``sys.excepthook`` that writes ``DIR/error.rank<R>.pid<P>.json`` before the usual traceback is
printed: ``{"rank", "pid", "time", "traceback"}``, the traceback as Python formats it (capped). The
converter's ``verify`` package parses it; this module never imports torch.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from types import TracebackType

ENV_DIR = "RUNTIME_SHIM_RECORD"
KEPT_CHARS = 20000


def install() -> None:
    """Chain the recording hook in front of the current ``sys.excepthook`` (once)."""
    if getattr(sys.excepthook, "_runtime_shim_failure", False):
        return
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        with contextlib.suppress(Exception):  # the user's traceback matters more than this record
            write(value, tb)
        previous(kind, value, tb)

    hook._runtime_shim_failure = True  # type: ignore[attr-defined]  # a marker on the function object
    sys.excepthook = hook


def write(value: BaseException, tb: TracebackType | None) -> None:
    """Write the record of ``value`` for this process (nothing when recording is off)."""
    folder = os.environ.get(ENV_DIR)
    if not folder:
        return
    text = "".join(traceback.format_exception(type(value), value, tb))
    if len(text) > KEPT_CHARS:  # the end holds the exception and the innermost frames
        text = text[-KEPT_CHARS:]
    record = {"rank": _rank(), "pid": os.getpid(), "time": time.time(), "traceback": text}
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"error.rank{record['rank']}.pid{os.getpid()}.json")
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    os.replace(temporary, path)


def _rank() -> int:
    # the default group's rank when torch has one; torch is not imported for this
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        pass
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0
