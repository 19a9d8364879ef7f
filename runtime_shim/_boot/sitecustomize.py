"""Start-up hook for child processes of a runtime_shim-activated process.

This directory is put on PYTHONPATH by runtime_shim.activate(). When the
interpreter starts with RUNTIME_SHIM_ACTIVE=1, the ``torch_npu`` import hook is
installed (cheap: torch is not imported until ``import torch_npu`` runs). Any
other sitecustomize further along sys.path is run afterwards, so this one never
hides it. With RUNTIME_SHIM_RECORD set (``ms_fmk_transplt verify``), the step
recorder (diagnostics/step_record.py) is installed too, whether or not the NPU is active, with
the hook that keeps the exception ending the process (diagnostics/failure_record.py).
"""

import importlib.machinery
import importlib.util
import os
import sys


def _install_hook() -> None:
    if os.environ.get("RUNTIME_SHIM_ACTIVE") != "1":
        return
    try:
        from runtime_shim.activate import install_import_hook
    except ImportError as exc:  # the package moved or was uninstalled
        sys.stderr.write(f"runtime_shim: cannot activate in child process: {exc}\n")
        return
    install_import_hook()
    if os.environ.get("TORCH_TRANSFER_TO_NPU") == "1":
        # a child of a transfer_to_npu run (python -m runtime_shim --transfer-to-npu)
        from runtime_shim.torch_npu_stub.contrib.autoload import enable

        enable()


def _install_recorder() -> None:
    # `ms_fmk_transplt verify` records steps in both of its runs, the CPU one included: the
    # recorder waits for `import torch` and never activates the simulated NPU itself.
    if not os.environ.get("RUNTIME_SHIM_RECORD"):
        return
    try:
        from runtime_shim.diagnostics import failure_record
        from runtime_shim.diagnostics.step_record import install_when_torch_loads
    except ImportError as exc:
        sys.stderr.write(f"runtime_shim: cannot record steps in this process: {exc}\n")
        return
    install_when_torch_loads()
    failure_record.install()  # the exception that ends the process, beside its steps


def _run_next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_install_hook()
_install_recorder()
_run_next_sitecustomize()
