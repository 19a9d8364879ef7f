"""A worker process lost mid-run (`kill -9`, the out-of-memory killer): one line, exit 1, nothing
written; and the executor's private worker table that stopping a run at once relies on."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_fmk_transplt import pipeline
from ms_fmk_transplt.cli import EXIT_FAILED_FILES, app

runner = CliRunner()
LOST = "error: a worker process ended abruptly (killed, or out of memory?): the run was stopped; nothing was written"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for name in ("a.py", "b.py", "boom.py", "c.py"):
        (root / name).write_text("import torch\nx = torch.zeros(3).cuda()\n")
    return root


@pytest.fixture
def boom(monkeypatch) -> None:
    """The worker that converts boom.py is killed outright, as `kill -9 PID` would (workers are forked)."""
    convert = pipeline._convert_path

    def killed_on_boom(rel, path, tables):
        if rel == "boom.py":
            os.kill(os.getpid(), signal.SIGKILL)
        return convert(rel, path, tables)

    monkeypatch.setattr(pipeline, "_convert_path", killed_on_boom)


def _run(*args: str):
    """The command with two workers, no cache, quiet (`{opts}` marks where they go, else the end)."""
    opts = ["-j", "2", "-q", "--no-cache"]
    if "{opts}" not in args:
        args = (*args, "{opts}")
    at = args.index("{opts}")
    return runner.invoke(app, [*args[:at], *opts, *args[at + 1 :]], catch_exceptions=False)


@pytest.mark.parametrize(
    "command",
    [
        ["-i", "{src}", "-o", "{out}"],
        ["analyse", "-o", "{out}", "{src}"],
        ["-i", "{src}", "--diff"],
        ["-i", "{src}", "-o", "{out}", "{opts}", "distributed", "-m", "a.py"],
    ],
    ids=["convert", "analyse", "diff", "distributed"],
)
def test_a_worker_killed_ends_the_run_with_one_line(
    project: Path, tmp_path: Path, boom: None, command: list[str]
) -> None:
    out = tmp_path / "out"
    result = _run(*(arg.format(src=project, out=out, opts="{opts}") for arg in command))
    assert result.exit_code == EXIT_FAILED_FILES
    assert result.stderr.strip() == LOST
    assert result.stdout == ""
    assert not out.exists()  # made by the run: gone with the staging folder in it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proj"]


def test_a_worker_killed_keeps_an_output_folder_that_was_there(
    project: Path, tmp_path: Path, boom: None
) -> None:
    (tmp_path / "out" / "earlier_msft").mkdir(parents=True)
    result = _run("-i", str(project), "-o", str(tmp_path / "out"))
    assert result.exit_code == EXIT_FAILED_FILES
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["earlier_msft"]


def test_workers_left_alone_convert_every_file(project: Path, tmp_path: Path) -> None:
    result = _run("-i", str(project), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "npu" in (tmp_path / "out" / "proj_msft" / "boom.py").read_text()


def _sleep() -> None:
    import time

    time.sleep(30)


@pytest.mark.parametrize("attempt", range(12))
def test_the_executor_still_keeps_its_workers_where_stop_now_reads_them(attempt: int) -> None:
    # pipeline._stop_now ends the workers through ProcessPoolExecutor._processes (no public
    # handle before Python 3.14): a release without it must fail here, not leave workers running.
    # Repeated: the executor's manager thread races _stop_now to reap the worker (see below).
    pool = ProcessPoolExecutor(1)
    try:
        future = pool.submit(_sleep)
        workers = list(pool._processes.values())
        assert workers and all(isinstance(w, BaseProcess) for w in workers)
        pipeline._stop_now(pool)
        assert not any(w.is_alive() for w in workers)
        assert future.cancelled() or future.exception(timeout=5) is not None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


class _ReapedElsewhere:
    """A worker another thread is reaping: join returns at once, and for a moment the process
    still reads as alive (what multiprocessing shows while the executor's manager thread holds
    the exit status it has just waited for)."""

    def __init__(self, alive_reads: int) -> None:
        self.alive_reads = alive_reads
        self.calls: list[str] = []

    def terminate(self) -> None:
        self.calls.append("terminate")

    def kill(self) -> None:
        self.calls.append("kill")

    def join(self, timeout: float | None = None) -> None:
        self.calls.append("join")

    def is_alive(self) -> bool:
        self.alive_reads -= 1
        return self.alive_reads >= 0


class _Pool:
    def __init__(self, *workers: object) -> None:
        self._processes = {i: w for i, w in enumerate(workers)}
        self.shut: list[tuple[bool, bool]] = []

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self.shut.append((wait, cancel_futures))


def test_stop_now_waits_for_a_worker_being_reaped_instead_of_killing_it() -> None:
    worker = _ReapedElsewhere(alive_reads=3)
    pool = _Pool(worker)
    pipeline._stop_now(pool)  # type: ignore[arg-type]
    assert pool.shut == [(False, True)]
    assert "kill" not in worker.calls
    assert worker.calls[0] == "terminate" and worker.calls.count("join") == 4


def test_stop_now_kills_a_worker_that_outlives_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "STOP_SECONDS", 0.05)
    worker = _ReapedElsewhere(alive_reads=10**6)
    pipeline._stop_now(_Pool(worker))  # type: ignore[arg-type]
    assert worker.calls.count("kill") == 1


_FORKED = """
import sys
from pathlib import Path
from ms_fmk_transplt import pipeline
from ms_fmk_transplt.discover import discover
from ms_fmk_transplt.ruleset import compile_rules, load_rules

tables = compile_rules(load_rules())
assert "ms_fmk_transplt.engine.conversion.convert" not in sys.modules  # else this test proves nothing
init = pipeline._init_worker
report = Path(sys.argv[2])

def init_and_tell(tables):
    with open(report / str(__import__("os").getpid()), "w") as out:
        out.write(str("ms_fmk_transplt.engine.conversion.convert" in sys.modules))
    init(tables)

pipeline._init_worker = init_and_tell
results = pipeline.map_files(discover(Path(sys.argv[1])), tables, jobs=2)
print(sorted(r.status.value for r in results))
"""


@pytest.mark.slow
def test_workers_start_with_the_engine_imported(project: Path, tmp_path: Path) -> None:
    """The parent imports the engine before it forks, so no worker pays that import again."""
    import subprocess
    import sys

    told = tmp_path / "told"
    told.mkdir()
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", _FORKED, str(project), str(told)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == str(["converted"] * 4)
    answers = [path.read_text() for path in told.iterdir()]
    assert answers == ["True", "True"]


def test_workers_are_forked_on_linux_whatever_the_default(monkeypatch) -> None:
    """Python 3.14 made forkserver Linux's default start method: the pool still forks there, so the
    workers inherit the imported engine and the tables; elsewhere the platform's default stays."""
    import multiprocessing

    monkeypatch.setattr(pipeline.sys, "platform", "linux")
    assert pipeline._pool_context() is multiprocessing.get_context("fork")
    monkeypatch.setattr(pipeline.sys, "platform", "darwin")
    assert pipeline._pool_context() is None


def _mixed_project(root: Path) -> Path:
    """Python files and files copied as they are (a shell launcher a text rule scans, data)."""
    root.mkdir()
    for index in range(4):
        (root / f"m{index}.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    (root / "data").mkdir()
    (root / "data" / "weights.bin").write_bytes(bytes(range(256)) * 64)
    (root / "run.sh").write_text("export CUDA_VISIBLE_DEVICES=0,1\npython m0.py\n")
    os.chmod(root / "run.sh", 0o755)
    os.utime(root / "data" / "weights.bin", (1_000_000_000, 1_000_000_000))
    return root


def test_other_files_are_copied_while_the_workers_convert(tmp_path: Path) -> None:
    """With workers, every file copied as it is reaches the sink before the first converted file
    comes back (this process copies while they convert); with one job, after the Python files."""
    from ms_fmk_transplt.discover import discover
    from ms_fmk_transplt.ruleset import compile_rules, load_rules

    root = _mixed_project(tmp_path / "proj")
    tables = compile_rules(load_rules())
    for jobs, others_first in ((2, True), (1, False)):
        seen: list[str] = []

        def sink(result, data=None, seen=seen):
            seen.append(result.path)
            return result

        results = pipeline.map_files(discover(root), tables, jobs=jobs, sink=sink)
        python = [path for path in seen if path.endswith(".py")]
        others = [path for path in seen if not path.endswith(".py")]
        assert sorted(others) == ["data/weights.bin", "run.sh"] and len(python) == 4
        assert (seen[: len(others)] == others) is others_first, (jobs, seen)
        scanned = {r.path: r for r in results}["run.sh"]
        assert [f.rule_id for f in scanned.findings], "the text rules scanned run.sh"


def test_an_output_error_on_a_copied_file_stops_the_workers(tmp_path: Path) -> None:
    from ms_fmk_transplt.discover import discover
    from ms_fmk_transplt.ruleset import compile_rules, load_rules

    root = _mixed_project(tmp_path / "proj")

    def sink(result, data=None):
        if result.path == "data/weights.bin":
            raise OSError(28, "No space left on device")
        return result

    with pytest.raises(OSError, match="No space left"):
        pipeline.map_files(discover(root), compile_rules(load_rules()), jobs=2, sink=sink)
    import multiprocessing

    assert multiprocessing.active_children() == []


def test_output_tree_with_workers_equals_one_job(tmp_path: Path) -> None:
    """The same bytes, modes and times in the output tree, and the same findings, from -j 2 and -j 1."""
    root = _mixed_project(tmp_path / "proj")
    trees = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        result = runner.invoke(app, ["-i", str(root), "-o", str(out), "-j", jobs, "-q", "--no-cache"])
        assert result.exit_code == 0, result.output
        folder = out / "proj_msft"
        trees[jobs] = {
            str(path.relative_to(folder)): (
                path.read_bytes(),
                path.stat().st_mode,
                path.stat().st_mtime if path.suffix != ".py" else None,
            )
            for path in sorted(folder.rglob("*"))
            if path.is_file()
            and (root / path.relative_to(folder)).exists()  # the inputs' copies, not reports
        }
    assert trees["1"] == trees["2"] and len(trees["2"]) == 6
    copied = trees["2"]["data/weights.bin"]
    assert copied[0] == (root / "data" / "weights.bin").read_bytes() and copied[2] == 1_000_000_000
    assert trees["2"]["run.sh"][1] & 0o777 == 0o755
