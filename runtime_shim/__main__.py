"""``python -m runtime_shim [--transfer-to-npu] [-m module | script.py] ARGS...``: run with the simulated NPU.

The script sees the ``sys.argv``, ``sys.path[0]`` and ``__name__ == "__main__"``
it would see when run directly; ``torchrun ... -m runtime_shim train.py`` works
the same way in every worker. ``--transfer-to-npu`` (or ``TORCH_TRANSFER_TO_NPU=1``) first
applies ``torch_npu.contrib.transfer_to_npu``, so an unmodified CUDA script runs on the npu.
"""

from __future__ import annotations

import os
import runpy
import sys

USAGE = "usage: python -m runtime_shim [--transfer-to-npu] [-m module | script.py] [args...]"


def main(argv: list[str] | None = None) -> None:
    """Activate the simulated device, then run the target script or module as ``__main__``."""
    args = list(sys.argv[1:] if argv is None else argv)
    transfer = bool(args) and args[0] == "--transfer-to-npu"
    if transfer:
        args = args[1:]
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not args else sys.stdout)
        raise SystemExit(2 if not args else 0)

    transfer = _transfer_requested(transfer)
    import runtime_shim

    if not runtime_shim.activate():
        sys.stderr.write("runtime_shim: a real torch_npu is installed; running without the simulated NPU\n")
    if transfer:
        from runtime_shim.torch_npu_stub.contrib.autoload import enable

        enable()

    if args[0] == "-m":
        if len(args) < 2:
            print(USAGE, file=sys.stderr)
            raise SystemExit(2)
        module = args[1]
        sys.argv = [module, *args[2:]]
        # Like `python -m`, the current directory heads the module search path.
        sys.path[0] = os.getcwd()
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return

    script = args[0]
    if not os.path.exists(script):
        sys.stderr.write(f"runtime_shim: can't open file {script!r}: No such file or directory\n")
        raise SystemExit(2)
    sys.argv = args
    # A directly run script has its own directory first on sys.path.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


def _transfer_requested(flag: bool) -> bool:
    # TORCH_TRANSFER_TO_NPU is torch_npu's switch (0 or 1); checked before torch is imported.
    value = os.environ.get("TORCH_TRANSFER_TO_NPU", "0")
    if value not in ("0", "1"):
        sys.stderr.write(f"runtime_shim: TORCH_TRANSFER_TO_NPU must be 0 or 1, not {value!r}\n")
        raise SystemExit(2)
    return flag or value == "1"


if __name__ == "__main__":
    main()
