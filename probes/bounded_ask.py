"""One question to the host asked of a forked child under a deadline, its child reaped at once.

A probe's checks and set-up read paths the operator names (a stat of an IO target, a
resolv.conf); on a mount that never answers, a read in the asking process would hang it for
good, so the read runs in a child (inspector.roots.bounded.Worker). The child exits as soon as
its socket closes; it is waited for here a moment, so a long-lived process (the TUI) asking
now and then keeps no `<defunct>` child until its next fork.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

from inspector.roots.bounded import Worker

T = TypeVar("T")
REAP_WAIT_S = 0.2       # an answered child exits in well under a millisecond


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
    give_up = time.monotonic() + REAP_WAIT_S
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] or time.monotonic() >= give_up:
                return
        except ChildProcessError:      # reaped already (inspector.roots.bounded.reap)
            return
        time.sleep(0.002)
