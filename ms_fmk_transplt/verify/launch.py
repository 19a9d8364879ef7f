"""The runs of `verify` as subprocesses: the original on the CPU, or under the simulated NPU's
transfer_to_npu when the CPU cannot be its reference, and the converted script on the simulated NPU,
each recording its steps (runtime_shim/diagnostics/step_record.py) under torchrun or not.

Nothing here imports torch or the runtime: the runs are other interpreters, told what to do
through their command line and environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ms_fmk_transplt.interrupts import Terminated

# Lines a CPU-only torch prints when a script insists on CUDA (or NCCL, CUDA's collectives).
NEEDS_CUDA_MARKERS = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "Attempting to deserialize object on a CUDA device",
    "Distributed package doesn't have NCCL built in",
    "ProcessGroupNCCL is only supported with GPUs",
    "CUDA driver initialization failed",
)
# Lines a CPU-only torch prints when it switches off a CUDA feature the script asked for and runs on
# without it: the CPU run then trains otherwise than the script does on a GPU (fp32 for fp16).
CUDA_DISABLED_MARKERS = (
    "is enabled, but CUDA is not available.  Disabling",  # torch.cuda.amp / torch.amp GradScaler
    "CUDA is not available or torch_xla is imported. Disabling autocast",
    "User provided device_type of 'cuda', but CUDA is not available. Disabling",
)
# stock torch's gloo now and then aborts while a process tears its groups down on a loaded machine
TEARDOWN_ABORT = "terminate called without an active exception"
PYTHON_NAMES = ("python", "python3")
STDERR_KEPT = 20000


class CommandError(Exception):
    """The command after `--` is not one verify can run."""


@dataclass(frozen=True)
class Target:
    """The user's command: a script and its arguments."""

    script: Path
    args: tuple[str, ...]


def parse_command(command: list[str]) -> Target:
    """``python SCRIPT.py ARGS`` (or ``SCRIPT.py ARGS``) as a Target."""
    words = list(command)
    if words and Path(words[0]).name.split(".")[0].startswith(PYTHON_NAMES) and not words[0].endswith(".py"):
        words = words[1:]
        while words and words[0] in ("-u", "-B", "-O", "-OO"):
            words = words[1:]
    if not words:
        raise CommandError("no script given: verify [OPTIONS] -- python SCRIPT.py ARGS")
    if words[0] == "-m":
        raise CommandError(
            "python -m MODULE is not supported: give the script's path (python path/to/train.py)"
        )
    if words[0].startswith("-"):
        raise CommandError(f"python option {words[0]} is not supported: give python SCRIPT.py ARGS")
    if Path(words[0]).name in ("torchrun",):
        raise CommandError("give the script, not torchrun: verify --nproc K -- python train.py ARGS")
    script = Path(words[0])
    if not script.is_file():
        raise CommandError(f"script not found: {script}")
    if script.suffix != ".py":
        raise CommandError(f"not a Python script: {script}")
    return Target(script, tuple(words[1:]))


@dataclass(frozen=True)
class Settings:
    """How both runs are made."""

    steps: int
    seed: int | None
    nproc: int
    timeout: float | None
    cwd: Path
    devices: int | None = None  # simulated NPUs (RUNTIME_SHIM_DEVICE_COUNT); None: the runtime's own


@dataclass(frozen=True)
class RunOutput:
    """One finished run: its command, exit code, output files and where its records are."""

    label: str
    command: tuple[str, ...]
    returncode: int
    timed_out: bool
    seconds: float
    stdout: Path
    stderr: Path
    records: Path
    stderr_end: str = ""  # the last STDERR_KEPT characters, read when the run ended

    def stderr_text(self) -> str:
        """The end of the run's stderr (its files may be gone with the work folder)."""
        return self.stderr_end

    def needs_cuda(self) -> str | None:
        """The line of stderr saying the script needs CUDA, if it failed for that reason."""
        if self.returncode == 0:
            return None
        # the last such line is the exception's own, after the traceback's source lines
        for line in reversed(self.stderr_text().splitlines()):
            if any(marker in line for marker in NEEDS_CUDA_MARKERS):
                return line.strip()
        return None

    def cuda_disabled(self) -> str | None:
        """The warning saying torch switched off a CUDA feature the script asked for, if any."""
        for line in self.stderr_text().splitlines():
            if any(marker in line for marker in CUDA_DISABLED_MARKERS):
                return line.strip().rpartition("Warning: ")[2] or line.strip()
        return None


def _launcher(settings: Settings) -> list[str]:
    if settings.nproc <= 1:
        return [sys.executable]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(settings.nproc),
    ]


def cpu_command(target: Target, settings: Settings) -> list[str]:
    """The original script, as the user runs it (under torchrun with --nproc)."""
    return [*_launcher(settings), str(target.script), *target.args]


def npu_command(script: Path, target: Target, settings: Settings) -> list[str]:
    """The converted script under ``python -m runtime_shim`` (torchrun ``-m runtime_shim`` with --nproc)."""
    return [*_launcher(settings), "-m", "runtime_shim", str(script), *target.args]


def transfer_command(target: Target, settings: Settings) -> list[str]:
    """The unmodified original under the simulated NPU's transfer_to_npu (torchrun with --nproc)."""
    return [*_launcher(settings), "-m", "runtime_shim", "--transfer-to-npu", str(target.script), *target.args]


def runtime_dir() -> Path:
    """runtime_shim's folder, found without importing it; CommandError when torch or it is missing."""
    spec = importlib.util.find_spec("runtime_shim")
    if spec is None or spec.origin is None or importlib.util.find_spec("torch") is None:
        raise CommandError('verify runs the simulated NPU: pip install "ms-fmk-transplt[runtime]"')
    return Path(spec.origin).resolve().parent


def environment(
    records: Path, settings: Settings, opcheck_report: Path | None, side: str = ""
) -> dict[str, str]:
    """The run's environment: the recorder switched on, the CPU run (``side`` "cpu", or no
    ``opcheck_report`` given) kept off any GPU, the simulated NPU's device count set."""
    env = dict(os.environ)
    package_parent, boot = str(runtime_dir().parent), str(runtime_dir() / "_boot")
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in (boot, package_parent)]
    env["PYTHONPATH"] = os.pathsep.join([boot, package_parent, *parts])
    env["RUNTIME_SHIM_RECORD"] = str(records)
    env["RUNTIME_SHIM_RECORD_STEPS"] = str(settings.steps)
    if settings.seed is not None:
        env["RUNTIME_SHIM_RECORD_SEED"] = str(settings.seed)
    else:
        env.pop("RUNTIME_SHIM_RECORD_SEED", None)
    env.setdefault("PYTHONHASHSEED", "0")
    # TORCH_TRANSFER_TO_NPU: only the transfer reference patches torch.cuda, by its command line
    for name in (
        "RUNTIME_SHIM_ACTIVE",
        "RUNTIME_SHIM_OPCHECK_RUN",
        "TORCHELASTIC_RUN_ID",
        "TORCH_TRANSFER_TO_NPU",
    ):
        env.pop(name, None)
    if side != "cpu" and settings.devices is not None:
        env["RUNTIME_SHIM_DEVICE_COUNT"] = str(settings.devices)
    if opcheck_report is None:
        if side in ("", "cpu"):
            env["CUDA_VISIBLE_DEVICES"] = ""  # "the original on the CPU", even on a machine with a GPU
        env.pop("RUNTIME_SHIM_OPCHECK_REPORT", None)
    else:
        env["RUNTIME_SHIM_OPCHECK_REPORT"] = str(opcheck_report)
        env.pop("RUNTIME_SHIM_OPCHECK_REPORT_PER_PROCESS", None)
    return env


def run(label: str, command: list[str], env: dict[str, str], work: Path, settings: Settings) -> RunOutput:
    """Run one side to its end (or its timeout), output to ``work/<label>.stdout|stderr``."""
    stdout, stderr = work / f"{label}.stdout", work / f"{label}.stderr"
    started = time.perf_counter()
    timed_out = False
    with stdout.open("wb") as out, stderr.open("wb") as err, _sigterm_interrupts():
        process = subprocess.Popen(
            command, cwd=settings.cwd, env=env, stdout=out, stderr=err, start_new_session=True
        )
        try:
            returncode = process.wait(timeout=settings.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            returncode = process.wait()
        except KeyboardInterrupt:
            _kill_group(process)
            process.wait()
            raise
    return RunOutput(
        label,
        tuple(command),
        returncode,
        timed_out,
        time.perf_counter() - started,
        stdout,
        stderr,
        Path(env["RUNTIME_SHIM_RECORD"]),
        _tail(stderr),
    )


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - STDERR_KEPT))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    # the run has its own session, so a signal to verify alone must take the run down with it
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # the run's own session: torchrun's ranks and DataLoader workers go with it
    try:
        os.killpg(process.pid, 9)
    except (ProcessLookupError, PermissionError, AttributeError):
        process.kill()
