"""How a run ends on a signal: SIGTERM is handled as Ctrl-C is, so the same clean-up runs
(staging folder removed, worker processes stopped), and worker processes never outlive the run;
a worker ended by a signal of its own (`kill -9`, the out-of-memory killer) ends the run with
WorkerLost, after the same clean-up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

STOPPING = (signal.SIGINT, signal.SIGTERM)
PARENT_POLL_SECONDS = 0.5


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job's timeout, `kill`) while a run was going: handled like Ctrl-C."""


class WorkerLost(Exception):
    """A worker process ended abruptly (killed by a signal, the out-of-memory killer, a crash in
    native code): the run cannot be finished. str() is the one-line message."""


def exit_code(exc: KeyboardInterrupt) -> int:
    """The shell's code for a run ended by the signal: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt and SIGTERM Terminated, the first of them only: later ones
    are ignored, so the clean-up the first one starts is not cut short. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        for number in STOPPING:
            signal.signal(number, signal.SIG_IGN)
        raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt

    previous = {number: signal.signal(number, stop) for number in STOPPING}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (delivered at the end, none lost) while worker processes are
    forked: a worker starts with them blocked and unblocks them once `as_worker` has set them up."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def as_worker() -> None:
    """Set up a worker process: Ctrl-C (sent to the whole process group) is left to the parent,
    which stops its workers; SIGTERM ends it; and it exits when its parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
    parent = os.getppid()
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()


def _exit_with_parent(parent: int) -> None:
    # a parent killed outright (SIGKILL) runs no clean-up: the worker is re-parented, and goes
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)
