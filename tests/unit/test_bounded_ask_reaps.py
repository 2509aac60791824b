"""ask_bounded reaps its child however late the child's exit comes: the TUI asks now and then
(a target's stat, a resolv.conf read) and must keep no `<defunct>` child. It waited 0.2 s for
the exit; on a loaded CI box two children exited later and stayed zombies."""
from __future__ import annotations

import os
import time

import psutil

from inspector.probes.bounded_ask import ask_bounded


def test_a_child_that_exits_late_is_reaped_all_the_same(monkeypatch):
    real_waitpid = os.waitpid

    def late(pid: int, options: int):
        """Every look without waiting finds the child still running (a late exit)."""
        if options & os.WNOHANG:
            return 0, 0
        return real_waitpid(pid, options)
    monkeypatch.setattr(os, "waitpid", late)
    pid = ask_bounded(os.getpid, 5.0)
    assert pid != os.getpid()
    give_up = time.monotonic() + 30
    while psutil.pid_exists(pid) and time.monotonic() < give_up:
        try:
            if psutil.Process(pid).ppid() != os.getpid():
                break                       # the pid went to another process since
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    gone = not psutil.pid_exists(pid) or psutil.Process(pid).ppid() != os.getpid()
    assert gone, psutil.Process(pid).status()
