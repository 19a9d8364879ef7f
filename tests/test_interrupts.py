"""Ctrl-C and SIGTERM end a run with worker processes at once: exit 130 / 143, the staging folder
removed, no worker left running; a parent killed outright takes its workers with it.

Each test starts the CLI on a tree that takes a two-worker run well over a minute of CPU, sends the
signal once the workers are up and the staging folder exists, and gives the run a generous
deadline to be gone (it takes about a second; a run that finished its work first would take far
longer than the deadline).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,  # subprocesses
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc"),
]

STARTUP_SECONDS = 90  # until the workers run: imports and rule compilation on a busy machine
DEADLINE_SECONDS = 15  # from the signal to the run, and every worker, gone
BLOCK = """
def step_{i}(model, batch):
    x = batch.cuda(non_blocking=True)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    y = model(x.to("cuda:0"))
    return torch.nn.functional.relu(y).sum()
"""
MAIN = """import torch
model = torch.nn.Linear(2, 2).cuda()
for step in range(3):
    loss = model(torch.zeros(2).cuda()).sum()
    loss.backward()
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3.3 MB of code the rules rewrite: 20-60 s of conversion for two workers (the machine's load)."""
    root = tmp_path_factory.mktemp("signals") / "tree"
    root.mkdir()
    text = "import torch\n" + "".join(BLOCK.format(i=i) for i in range(200))
    for number in range(80):
        (root / f"m{number}.py").write_text(text)
    (root / "main.py").write_text(MAIN)
    return root


def _state(pid: int) -> str | None:
    """The process's state letter, None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _children(pid: int) -> set[int]:
    try:
        import psutil
    except ImportError:
        found = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
        return found
    try:
        return {child.pid for child in psutil.Process(pid).children()}
    except psutil.NoSuchProcess:
        return set()


def _running(pids: set[int]) -> set[int]:
    return {pid for pid in pids if _state(pid) not in (None, "Z")}  # a zombie has ended


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    """The CLI run in `cwd`, its stderr to a file beside it (a pipe would stay open while a
    worker lives)."""
    cwd.mkdir(exist_ok=True)
    with (cwd.parent / "stderr").open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "ms_fmk_transplt", *args],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,  # its own process group, as a shell gives a command
        )


def _under_way(process: subprocess.Popen, staged: Path | None) -> set[int]:
    """The worker processes, once both run (and the staging folder exists, below `staged`)."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run ended before the signal"
        workers = _running(_children(process.pid))
        if len(workers) >= 2 and (staged is None or any(staged.glob(".*.partial-*"))):
            return workers
        time.sleep(0.05)
    process.kill()
    pytest.fail("the run did not start its workers")


def _ended(process: subprocess.Popen, workers: set[int], cwd: Path) -> tuple[int, str]:
    """The run's exit code and stderr once it and its workers are gone; fails past the deadline."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    try:
        process.wait(timeout=DEADLINE_SECONDS)
        while _running(workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = _running(workers)
        assert not left, f"workers {sorted(left)} outlived the run"
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {DEADLINE_SECONDS} s after the signal")
    finally:
        for pid in _running(workers) | ({process.pid} if process.poll() is None else set()):
            os.kill(pid, signal.SIGKILL)
        process.wait()
    return process.returncode, (cwd.parent / "stderr").read_text()


@pytest.mark.parametrize(
    "signum,group,code",
    [
        (signal.SIGINT, True, 130),  # Ctrl-C in a terminal: the parent and its workers get it
        (signal.SIGINT, False, 130),
        (signal.SIGTERM, False, 143),  # kill PID, a CI job's timeout
        (signal.SIGTERM, True, 143),
    ],
    ids=["int-group", "int-parent", "term-parent", "term-group"],
)
def test_a_signal_stops_the_conversion_and_its_workers(
    tree: Path, tmp_path: Path, signum: int, group: bool, code: int
) -> None:
    cwd = tmp_path / "run"
    process = _start(["-i", str(tree), "-o", "out", "-j", "2", "--no-cache", "-q"], cwd)
    workers = _under_way(process, cwd / "out")
    (os.killpg if group else os.kill)(process.pid, signum)
    returncode, stderr = _ended(process, workers, cwd)
    assert returncode == code, stderr
    assert stderr.strip() == "interrupted: nothing was written"  # no worker's traceback either
    assert list(cwd.iterdir()) == []  # out/ was made by the run: gone with the staging folder in it


def test_a_signal_keeps_an_output_folder_that_was_there(tree: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "run"
    (cwd / "out" / "earlier_msft").mkdir(parents=True)
    process = _start(["-i", str(tree), "-o", "out", "-j", "2", "--no-cache", "-q"], cwd)
    workers = _under_way(process, cwd / "out")
    os.kill(process.pid, signal.SIGTERM)
    returncode, _ = _ended(process, workers, cwd)
    assert returncode == 143
    assert [p.name for p in (cwd / "out").iterdir()] == ["earlier_msft"]


@pytest.mark.parametrize(
    "command,staged",
    [
        (["analyse", "-j", "2", "--no-cache", "-q", "-o", "reports", "{tree}"], False),
        (["-i", "{tree}", "-o", "out", "--diff", "-j", "2", "--no-cache", "-q"], False),
        (["-i", "{tree}", "-o", "out", "-j", "2", "--no-cache", "-q", "distributed", "-m", "main.py"], True),
    ],
    ids=["analyse", "diff", "distributed"],
)
def test_sigterm_stops_the_other_commands(
    tree: Path, tmp_path: Path, command: list[str], staged: bool
) -> None:
    cwd = tmp_path / "run"
    process = _start([arg.format(tree=tree) for arg in command], cwd)
    workers = _under_way(process, cwd / "out" if staged else None)
    os.kill(process.pid, signal.SIGTERM)
    returncode, stderr = _ended(process, workers, cwd)
    assert returncode == 143, stderr
    assert "Traceback" not in stderr
    assert list(cwd.iterdir()) == []  # no reports, output or staging folder


def test_workers_end_with_a_parent_killed_outright(tree: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "run"
    process = _start(["-i", str(tree), "-o", "out", "-j", "2", "--no-cache", "-q"], cwd)
    workers = _under_way(process, cwd / "out")
    os.kill(process.pid, signal.SIGKILL)  # no clean-up runs: the workers must notice alone
    returncode, _ = _ended(process, workers, cwd)
    assert returncode == -signal.SIGKILL


@pytest.mark.parametrize(
    "command,staged",
    [
        (["-i", "{tree}", "-o", "out", "-j", "2", "--no-cache", "-q"], True),
        (["analyse", "-j", "2", "--no-cache", "-q", "-o", "reports", "{tree}"], False),
    ],
    ids=["convert", "analyse"],
)
def test_a_worker_killed_outright_ends_the_run_with_one_line(
    tree: Path, tmp_path: Path, command: list[str], staged: bool
) -> None:
    cwd = tmp_path / "run"
    process = _start([arg.format(tree=tree) for arg in command], cwd)
    workers = _under_way(process, cwd / "out" if staged else None)
    os.kill(min(workers), signal.SIGKILL)  # `kill -9` of one worker, the out-of-memory killer
    returncode, stderr = _ended(process, workers, cwd)
    assert returncode == 1, stderr
    assert stderr.strip() == (
        "error: a worker process ended abruptly (killed, or out of memory?): the run was stopped;"
        " nothing was written"
    )
    assert list(cwd.iterdir()) == []  # no reports, output or staging folder
