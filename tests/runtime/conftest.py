"""Runtime tests share one process-wide simulated npu, activated once here."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

torch = pytest.importorskip("torch")

import runtime_shim  # noqa: E402

# Tests check opcheck explicitly; its warnings would only be noise elsewhere.
os.environ.setdefault("RUNTIME_SHIM_OPCHECK", "off")
runtime_shim.activate()


@pytest.fixture
def npu():
    """The simulated device, for tests that need torch.device("npu:0")."""
    return torch.device("npu", 0)


#: What a child process keeps of the RUNTIME_SHIM_* environment: the native part's build folder
#: and the dispatch path under test.
KEPT_ENV = ("RUNTIME_SHIM_CACHE", "RUNTIME_SHIM_NATIVE_DISPATCH")


def child_environment() -> dict[str, str]:
    """This process's environment without the RUNTIME_SHIM_* settings, except KEPT_ENV."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RUNTIME_SHIM") or k in KEPT_ENV}


def run_python(args, env_extra=None, cwd=None, timeout=240):
    """Run the venv's python with ``args`` in a clean-ish environment; return the CompletedProcess."""
    import subprocess

    env = child_environment()
    env["PYTHONPATH"] = str(ROOT)
    env.pop("TORCH_NPU_FALLBACK_CPU_DISABLE", None)
    env["RUNTIME_SHIM_OPCHECK"] = "off"
    env.update(env_extra or {})
    # A session of its own, so a timeout kills the workers a launcher started too (a hung
    # torchrun otherwise leaves its ranks running after the test has failed).
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=cwd or ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise AssertionError(
            f"timed out after {timeout}s: {' '.join(map(str, args))}\n{stderr[-4000:]}"
        ) from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
