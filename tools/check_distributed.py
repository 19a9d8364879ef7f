"""Check `ms_fmk_transplt distributed` on a project: the converted script on K simulated NPUs
(hccl) must print exactly what the same distributed script prints on K CPU processes (gloo).

    python tools/check_distributed.py SRC -m MAIN [-t MODEL] [--nproc 2] -- SCRIPT_ARGS

Writes both versions under a temporary folder (or --work), runs each with torchrun, compares the
standard output line by line (rank 0 prints; every value is printed as the script formats it;
device names are compared as DEVICE, --mask REGEX hides timings) and prints one verdict line.
--env KEY=VALUE sets the environment of both sides, --cpu-env of the CPU side only. Exit 0 identical, 1 different, 2 a run failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ms_fmk_transplt.distributed.stage import DistributedStage  # noqa: E402
from ms_fmk_transplt.run import Options, convert_project  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


DEVICE = re.compile(r"\b(?:npu|cpu|cuda)(?::\d+)?\b")


def _run(
    folder: Path, main: str, nproc: int, shim: bool, args: list[str], timeout: int, extra: dict[str, str]
) -> subprocess.CompletedProcess:
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc)]
    torchrun += ["--master-addr", "127.0.0.1", "--master-port", str(_port())]
    command = [*torchrun, *(["-m", "runtime_shim"] if shim else []), main, *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RUNTIME_SHIM_OPCHECK": "off"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    for key, value in extra.items():
        env[key] = os.pathsep.join((value, env[key])) if key == "PYTHONPATH" else value
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)


def main() -> int:
    """Convert, run both sides, compare; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("-m", "--main", type=Path, default=None)
    parser.add_argument("-t", "--target-model", default=None)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None, help="keep both versions here")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--cpu-env", action="append", default=[], help="KEY=VALUE for the CPU side only")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for both sides")
    parser.add_argument("--mask", action="append", default=[], help="regex of output not compared (timings)")
    parser.add_argument("--lines", default=None, help="compare only the output lines this regex finds")
    parser.add_argument(
        "--original",
        default=None,
        help="also run the original as one process on the CPU with these arguments (quoted; the same"
        " global batch) and compare its output with the 2-rank NPU run's",
    )
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    options = parser.parse_args(argv[:split])
    options.script_args = argv[split + 1 :]
    work = options.work or Path(tempfile.mkdtemp(prefix="check_distributed_"))
    stage = DistributedStage(options.source, options.main, options.target_model)
    cpu = work / "cpu"
    shutil.rmtree(cpu, ignore_errors=True)
    if options.source.is_dir():
        shutil.copytree(options.source, cpu)
    else:
        cpu.mkdir(parents=True)
    if stage.result.output is not None:
        (cpu / stage.main_rel).write_text(stage.result.output)
    try:
        run = convert_project(
            Options(source=options.source, output=work, force=True, use_cache=False, suffix=stage.suffix),
            stage=stage,
        )
    finally:
        stage.close()
    npu = Path(run.output_root)
    done = {}
    for side, folder, shim in (("cpu/gloo", cpu, False), ("npu/hccl", npu, True)):
        extra = dict(item.split("=", 1) for item in options.env)
        if not shim:
            extra.update(item.split("=", 1) for item in options.cpu_env)
        proc = _run(folder, stage.main_rel, options.nproc, shim, options.script_args, options.timeout, extra)
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if "Error" in line or "error:" in line]
            print(f"{options.source}: {side} run failed ({proc.returncode}): {' | '.join(errors[:3])}")
            return 2
        # device names differ by design ("Using device: npu"): compared as DEVICE
        done[side] = _masked(options, proc.stdout)
    cpu_lines, npu_lines = done["cpu/gloo"], done["npu/hccl"]
    if options.original is not None:
        _compare_original(options, stage.main_rel, work, npu_lines)
    if cpu_lines == npu_lines:
        print(
            f"{options.source}: {len(npu_lines)} output lines, {options.nproc} ranks: bit-identical (work: {work})"
        )
        return 0
    first = next(
        (i for i, (a, b) in enumerate(zip(cpu_lines, npu_lines)) if a != b),
        min(len(cpu_lines), len(npu_lines)),
    )
    print(
        f"{options.source}: output differs at line {first + 1}: cpu {cpu_lines[first : first + 1]} npu {npu_lines[first : first + 1]}"
    )
    return 1


def _masked(options: argparse.Namespace, stdout: str) -> list[str]:
    lines = [DEVICE.sub("DEVICE", line) for line in stdout.splitlines()]
    if options.lines is not None:
        lines = [line for line in lines if re.search(options.lines, line)]
    for mask in options.mask:
        lines = [re.sub(mask, "MASKED", line) for line in lines]
    return lines


def _compare_original(options: argparse.Namespace, main: str, work: Path, npu_lines: list[str]) -> None:
    """Run the original as one process on the CPU and print how its output compares."""
    folder = options.source if options.source.is_dir() else options.source.parent
    scratch = work / "original"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(folder, scratch)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for key, value in (item.split("=", 1) for item in options.env):
        env[key] = os.pathsep.join((value, env.get(key, ""))) if key == "PYTHONPATH" else value
    command = [sys.executable, main, *shlex.split(options.original)]
    proc = subprocess.run(
        command, cwd=scratch, env=env, capture_output=True, text=True, timeout=options.timeout
    )
    lines = _masked(options, proc.stdout)
    at = next(
        (i for i, (a, b) in enumerate(zip(lines, npu_lines)) if a != b), min(len(lines), len(npu_lines))
    )
    same = lines == npu_lines
    verdict = (
        "identical"
        if same
        else f"differs from line {at + 1}: {lines[at : at + 1]} vs {npu_lines[at : at + 1]}"
    )
    print(
        f"{options.source}: single-process original (rc {proc.returncode}) vs {options.nproc} npu ranks: {verdict}"
    )


if __name__ == "__main__":
    sys.exit(main())
