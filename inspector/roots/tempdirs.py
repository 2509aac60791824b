"""Private temporary trees (an unpacked capture) that never outlive the process.

They are removed at exit, and also when SIGTERM or SIGHUP ends the process: Python dies of those
signals without running atexit, which left a full unpacked tree in /tmp after every `timeout`,
`kill` or closed SSH session. The handler is installed only where the signal still has its
default action (a command or the TUI that handles it exits normally, and atexit runs); it
removes the trees and dies of the same signal, so the exit status is what it would have been.
A forked child (inspector.roots.bounded's readers) never removes its parent's trees.
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
import time

from inspector.roots.fork_locks import lock_renewed_at_fork

_trees: dict[str, int] = {}       # path -> the process that made it, the one to remove it
_writers: dict[str, int] = {}     # path -> the child process filling it (written_by)
STOP_WAIT_S = 1.0
# reentrant: the signal handler may run while the main thread holds it
_lock = lock_renewed_at_fork(reentrant=True)
_at_exit = _on_signals = False


def make(prefix: str) -> str:
    """A new private (0700) directory, removed however the process ends."""
    _install()
    path = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _trees[path] = os.getpid()
    return path


def written_by(path: str, pid: int | None) -> None:
    """`pid` (a child process) is filling `path`: it is stopped before the tree is removed,
    or it would go on creating files in it while it goes. None: it is done."""
    with _lock:
        if pid is None:
            _writers.pop(path, None)
        else:
            _writers[path] = pid


def remove(path: str, wait: bool = True) -> None:
    """Remove the tree now; `wait=False` when the command is out of time: its writer is
    stopped here, and the files (200,000 of them take seconds) are removed by a detached
    process, first renamed out of the way so no later command can mistake them for its own."""
    with _lock:
        _trees.pop(path, None)
        writer = _writers.pop(path, None)
    if wait:
        _remove_tree(path, writer)
        return
    if writer is not None:
        _stop(writer)
    doomed = path + ".removing"
    try:
        os.rename(path, doomed)
    except OSError:
        doomed = path
    _remove_detached(doomed)


def _remove_detached(path: str) -> None:
    """shutil.rmtree(path) in a grandchild in its own session: nothing of ours waits for it,
    and it holds none of our descriptors (a pipe a caller reads to its end)."""
    try:
        pid = os.fork()
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return
    if pid:
        os.waitpid(pid, 0)          # the intermediate child exits at once
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.nice(10)
        for _ in range(20):     # the killed writer may add a file or two before it is gone
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.lexists(path):
                break
            time.sleep(0.5)
    finally:
        os._exit(0)


def remove_all() -> None:
    me = os.getpid()
    with _lock:
        paths = [path for path, owner in _trees.items() if owner == me]
        for path in paths:
            del _trees[path]
        writers = {path: _writers.pop(path, None) for path in paths}
    for path in paths:
        _remove_tree(path, writers[path])


def _remove_tree(path: str, writer: int | None) -> None:
    if writer is not None:
        _stop(writer)
    shutil.rmtree(path, ignore_errors=True)


def _stop(pid: int) -> None:
    """Kill a child and wait (briefly) for it to be gone. One asleep in a read the kernel never
    answers cannot die yet, but it writes nothing either."""
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return
    give_up = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < give_up:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:        # reaped elsewhere (inspector.roots.bounded.reap)
            return
        time.sleep(0.01)


def _on_signal(signum: int, _frame) -> None:
    remove_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install() -> None:
    global _at_exit, _on_signals
    if not _at_exit:
        _at_exit = True
        atexit.register(remove_all)
    if _on_signals or threading.current_thread() is not threading.main_thread():
        return      # handlers can only be set from the main thread; atexit still runs
    _on_signals = True
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _on_signal)
