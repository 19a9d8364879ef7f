"""How the console script ends: once a command has returned, the process exits without the
interpreter's finalisation (cli.end_process), with the command's exit code, every output and
every byte of stdout/stderr delivered, and the atexit handlers run; a non-daemon thread still
running, or a status that is not an exit code, takes the interpreter's usual way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # subprocesses

ROOT = Path(__file__).resolve().parents[1]

# Run before the CLI in the child: an object whose finaliser says when the interpreter's
# finalisation frees it (module globals are cleared then), and an atexit handler.
PRELUDE = """
import atexit, os, sys, threading, time
class Marker:
    def __del__(self):  # the streams may be gone by then: straight to the descriptor
        os.write(2, b"FINALISED\\n")
marker = Marker()
atexit.register(lambda: sys.stderr.write("ATEXIT\\n"))
if sys.argv[1] == "thread":
    def late():  # still running when the command returns: it ends a while after the output is there
        while not os.path.exists(os.environ["WAIT_FOR"]):
            time.sleep(0.01)
        time.sleep(0.5)
        sys.stderr.write("THREAD DONE\\n")
    threading.Thread(target=late).start()
if sys.argv[1] == "text-status":
    import ms_fmk_transplt.cli as cli
    cli.app = lambda prog_name: sys.exit("ended with a message")
from ms_fmk_transplt.cli import main
sys.argv = ["ms_fmk_transplt", *sys.argv[2:]]
main()
"""


def _run(
    tmp_path: Path, mode: str, *args: str, wait_for: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WAIT_FOR": str(wait_for)}
    return subprocess.run(
        [sys.executable, "-c", PRELUDE, mode, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("import torch\nx = torch.zeros(3).cuda()\ny = torch.fft.fftshift(x)\n")
    (root / "b.py").write_text("print('hello')\n")
    return root


def test_a_finished_run_skips_finalisation_and_keeps_its_outputs(tmp_path: Path, project: Path) -> None:
    done = _run(tmp_path, "plain", "-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache")
    assert done.returncode == 0, done.stderr
    assert "FINALISED" not in done.stderr
    assert "ATEXIT" in done.stderr  # the handlers registered by anyone still run
    folder = tmp_path / "out" / "proj_msft"
    assert "torch_npu" in (folder / "a.py").read_text()
    assert json.loads((folder / "report.json").read_text())["files"]
    for report in ("msFmkTranspltlog.txt", "change_list.csv", "unsupported_op.xlsx"):
        assert (folder / report).stat().st_size > 0


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        (["--strict"], 3),  # unsupported APIs found
        (["--fail-on", "unsupported"], 4),
    ],
)
def test_exit_codes_are_kept(tmp_path: Path, project: Path, extra: list[str], code: int) -> None:
    done = _run(
        tmp_path, "plain", "-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache", *extra
    )
    assert done.returncode == code, done.stderr
    assert "FINALISED" not in done.stderr


def test_a_usage_error_keeps_its_code_and_message(tmp_path: Path) -> None:
    done = _run(tmp_path, "plain", "-i", str(tmp_path / "missing"), "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "input not found" in done.stderr
    assert "FINALISED" not in done.stderr


def test_a_failed_file_exits_1(tmp_path: Path, project: Path) -> None:
    (project / "bad.py").write_text("def broken(:\n")
    done = _run(tmp_path, "plain", "-i", str(project), "-o", str(tmp_path / "out"), "-q", "--no-cache")
    assert done.returncode == 1
    assert "bad.py" in done.stderr


def test_stdout_is_delivered_whole(tmp_path: Path, project: Path) -> None:
    """A report on stdout, bigger than a pipe's buffer, arrives whole before the process ends."""
    for number in range(60):
        (project / f"m{number}.py").write_text(
            "import torch\n" + "y = torch.fft.fftshift(torch.zeros(3))\n" * 20
        )
    done = _run(
        tmp_path,
        "plain",
        "analyse",
        str(project),
        "-q",
        "--no-cache",
        "--no-xlsx",
        "--report-format",
        "json",
        "--report",
        "-",
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) > 65536
    assert json.loads(done.stdout)
    assert "FINALISED" not in done.stderr


def test_a_running_thread_is_waited_for(tmp_path: Path, project: Path) -> None:
    """A thread that is not a daemon keeps the interpreter's way: it finishes, then finalisation."""
    folder = tmp_path / "out" / "proj_msft"
    done = _run(
        tmp_path,
        "thread",
        "-i",
        str(project),
        "-o",
        str(tmp_path / "out"),
        "-q",
        "--no-cache",
        wait_for=folder,
    )
    assert done.returncode == 0, done.stderr
    assert "THREAD DONE" in done.stderr
    assert "FINALISED" in done.stderr


def test_a_status_that_is_not_a_code_takes_the_usual_way(tmp_path: Path) -> None:
    done = _run(tmp_path, "text-status")
    assert done.returncode == 1
    assert "ended with a message" in done.stderr
    assert "FINALISED" in done.stderr
