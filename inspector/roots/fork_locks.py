"""Locks that a forked child can use.

Inspector forks from threaded processes (a command's collector threads, the reaper thread,
the TUI's workers). A lock another thread held at the fork stays held for good in the child,
where that thread does not exist: a snapshot's probe child waited forever in reap() because
the parent's reaper thread held its lock at the fork (about one IO probe run in ten)."""
from __future__ import annotations

import os
import threading
import weakref
from typing import Any

_locks: weakref.WeakSet = weakref.WeakSet()    # an object's lock goes with the object


def lock_renewed_at_fork(reentrant: bool = False) -> Any:
    """A Lock (or RLock) that a forked child finds free. Re-created in place in the child
    (`_at_fork_reinit`, as CPython's own logging and concurrent.futures keep theirs), so every
    name bound to it stays valid."""
    lock = threading.RLock() if reentrant else threading.Lock()
    _locks.add(lock)
    return lock


def _renew_all() -> None:
    for lock in list(_locks):
        lock._at_fork_reinit()


os.register_at_fork(after_in_child=_renew_all)
