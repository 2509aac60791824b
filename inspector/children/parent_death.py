"""Processes that must not outlive the one that started them: the TUI's probe runs
(inspector.probes.child), the forked probe runs of snapshot, export and record
(inspector.probes.forked_runs), the memcached probe's workers
(inspector.probes.memcached.workers) and the child unpacking a capture
(inspector.captures.capture).

Their parent ends them on its way out, but a parent can end without a way out (SIGKILL, a
crash, an exit watchdog's os._exit), and the workers sit in sessions of their own, out of reach
of the terminal's SIGHUP. PR_SET_PDEATHSIG has the kernel send a signal when the parent goes,
however it goes. (The kernel sends it when the *thread* that forked the child ends: the callers
fork from a thread that lives as long as the process or the run.)
"""
from __future__ import annotations

import ctypes
import os

PR_SET_PDEATHSIG = 1
PARENT_ARG = "--parent"


def end_with_parent(parent: int, signum: int) -> bool:
    """Have `signum` sent to this process when its parent, whose pid `parent` the parent itself
    gave, ends; if it has ended already (this process was reparented before getting here), the
    signal comes now. False where prctl is not available (not Linux)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    if prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        return False
    if os.getppid() != parent:
        os.kill(os.getpid(), signum)
    return True
