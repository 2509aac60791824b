"""Writes to a child process's stdin that fail with EPIPE instead of ending the command.

cli.py sets SIGPIPE to SIG_DFL so that `inspector report | head` ends quietly, as Unix tools
do. The same signal also comes from a write to a child that has exited (ssh that could not
connect, a helper tool that stopped reading), and then it killed the whole command, a fleet
of hosts with it, instead of raising BrokenPipeError where the caller handles it. Inside
`no_sigpipe()` the calling thread blocks SIGPIPE, so the kernel's write returns EPIPE; the
signal left pending on the thread is consumed before the mask is restored. Thread-safe: the
mask and the pending signal are the thread's own (SIGPIPE from a write is thread-directed).
"""
from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

_SIGPIPE = {signal.SIGPIPE}


@contextmanager
def no_sigpipe() -> Iterator[None]:
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGPIPE)
    try:
        yield
    finally:
        if signal.SIGPIPE not in previous:
            while signal.sigtimedwait(_SIGPIPE, 0) is not None:
                pass
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
