"""One question to the host asked of a forked child under a deadline, its child reaped at once.

A probe's checks and set-up read paths the operator names (a stat of an IO target, a
resolv.conf); on a mount that never answers, a read in the asking process would hang it for
good, so the read runs in a child (inspector.roots.bounded.Worker). The child exits as soon as
its socket closes, and a thread waits for that, so a long-lived process (the TUI) asking now
and then keeps no `<defunct>` child until its next fork, however late a loaded host runs the
child's exit.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar

from inspector.roots.bounded import Worker

T = TypeVar("T")


def ask_bounded(func: Callable[[], T], timeout: float) -> T:
    """`func()` in a forked child, its result pickled back; TimedOut or WorkerFailed
    (inspector.roots.bounded) otherwise."""
    worker = Worker(lambda _request: func())
    try:
        result: T = worker.call(None, timeout)
        return result
    finally:
        answered = worker.alive
        worker.close()
        if answered:
            _reap(worker.pid)


def _reap(pid: int) -> None:
    """Now if the answered child has exited, else as soon as it does (a thread waits)."""
    if not _reaped(pid, os.WNOHANG):
        threading.Thread(target=_reaped, args=(pid, 0), name=f"reap {pid}",
                         daemon=True).start()


def _reaped(pid: int, options: int) -> bool:
    try:
        return bool(os.waitpid(pid, options)[0])
    except ChildProcessError:      # reaped already (inspector.roots.bounded.reap)
        return True
