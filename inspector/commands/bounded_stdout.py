"""Standard output that cannot hold a bounded command past its bound: `probe io -w 3s -i 1ms |
reader` whose reader stops reading filled the pipe, the next print blocked, and the probe
outlived its deadline for as long as the reader slept.

While a command runs, its prints go to a queue that a thread writes out; the command never
waits on the reader. At the end it waits `grace` seconds at most for the reader to take what
is left; what the reader never took is dropped, said on stderr, and the command exits on time
(its status unchanged). A reader that keeps reading, even slowly, gets every line: the queue
holds MAX_QUEUED lines, beyond which lines are dropped (and counted) rather than memory grown.
A reader that closed the pipe ends the command by SIGPIPE, as before.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator

MAX_QUEUED = 200_000      # texts waiting for the reader (a -i 1ms run prints 1,000 a second)
GRACE_S = 2.0             # after the run, for the reader to take what is left


class QueuedStdout:
    """A file-like stdout (write, flush) whose writes a thread passes to fd `fd`."""

    def __init__(self, fd: int = 1):
        self.fd = fd
        self.dropped = 0
        self._queue: deque[bytes] = deque()
        self._cond = threading.Condition()
        self._writing = False
        threading.Thread(target=self._pump, daemon=True, name="stdout").start()

    def write(self, text: str) -> int:
        with self._cond:
            if len(self._queue) >= MAX_QUEUED:
                self.dropped += 1
            else:
                self._queue.append(text.encode("utf-8", "replace"))
                self._cond.notify()
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def _pump(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                data = b"".join(self._queue)
                self._queue.clear()
                self._writing = True
            view = memoryview(data)
            while view:        # blocks while the reader does not read: only this thread
                view = view[os.write(self.fd, view):]
            with self._cond:
                self._writing = False
                self._cond.notify_all()

    def drain(self, grace: float) -> bool:
        """Wait up to `grace` seconds for everything queued to be written."""
        give_up = time.monotonic() + grace
        with self._cond:
            while self._queue or self._writing:
                left = give_up - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def unwritten(self) -> int:
        with self._cond:
            return len(self._queue) + (1 if self._writing else 0) + self.dropped


@contextlib.contextmanager
def stdout_never_blocks(grace: float = GRACE_S) -> Iterator[None]:
    """sys.stdout queued for the block (nothing changes on a terminal: its writes do not
    wait on a reader that went to sleep). After it, at most `grace` s for the reader."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):   # a StringIO (tests run in-process)
        fd = -1
    if fd < 0 or sys.stdout.isatty():
        yield
        return
    sys.stdout.flush()
    queued, real = QueuedStdout(fd), sys.stdout
    sys.stdout = queued        # write and flush: all print needs
    try:
        yield
    finally:
        sys.stdout = real
        if not queued.drain(grace):
            lost = queued.unwritten()
            # the thread stays blocked in its write; the exit must not flush into that pipe
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
            with contextlib.suppress(OSError):
                print(f"inspector: standard output not read for {grace:g} s after the run: "
                      f"{lost} writes dropped", file=sys.stderr, flush=True)
        elif queued.dropped:
            print(f"inspector: standard output read too slowly: {queued.dropped} writes "
                  "dropped", file=sys.stderr, flush=True)
