"""The live sampler in a child process: the one sampler of `inspector top`, `check --live`,
`record --samples` and the TUI.

LiveSampler bounds each source by a deadline, but a read that never returns leaves its thread
in the kernel, and a process with such a thread cannot finish exiting (see inspector.roots.bounded):
`top` on a host whose /proc/diskstats hangs would print its blocks and then never end, and the
TUI could not quit. Here the sampler and its threads live in a forked child; the parent gets
each `Counters` through a socket and exits whenever it likes.

The child is forked at construction: build a SamplerProcess before starting threads (a lock
another thread holds would stay held in the child). A call that times out leaves the child
behind and the next call forks a new one (its D-state and NIC-stall trackers start afresh).
"""
from __future__ import annotations

import copyreg
import threading
import time
from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter
from typing import Any

from inspector.live.procs import ProcIo, ProcStat
from inspector.live.sampler import READ_TIMEOUT, Counters, LiveSampler
from inspector.model import Unknown
from inspector.roots.bounded import TimedOut, Worker, WorkerFailed
from inspector.roots.host import HostRoot

# beyond the sampler's own deadline: pickling the counters of a thousand processes takes a
# few milliseconds, a child paged out on a loaded host can take longer to wake
ANSWER_GRACE = 1.0


def _pickled_by_fields(cls: type) -> None:
    """Pickle `cls` (a slotted dataclass whose fields all go to __init__, in order) as the
    class and a tuple of its field values: the default for a slotted class goes through
    copyreg's generic reduction and a state dict per object. A sample holds one ProcStat per
    process and one ProcIo per readable process: 0.93 -> 0.42 ms to pickle a sample of 175
    processes in the child and 0.58 -> 0.29 ms to unpickle it in the caller, each second."""
    names = [f.name for f in fields(cls)]
    assert all(f.init for f in fields(cls)) and tuple(names) == getattr(cls, "__slots__", ()), cls
    values = attrgetter(*names)
    copyreg.pickle(cls, lambda obj: (cls, values(obj)))


for _cls in (ProcStat, ProcIo):
    _pickled_by_fields(_cls)


class SamplerProcess:
    """`counters()` / `sample()` like LiveSampler.sample() (same options), from a child."""

    def __init__(self, root: HostRoot, worker: Worker | None = None, **options: Any):
        """`worker`: a child already serving `sampler_service(root, **options)` (one it
        shares with other services, inspector.tui.readers); by default one is forked."""
        self.root = root
        self.options = options
        self.read_timeout = float(options.get("read_timeout", READ_TIMEOUT))
        self.timeout = self.read_timeout + ANSWER_GRACE
        self._lock = threading.Lock()
        self._busy = False
        self._closed = False
        self._worker: Worker | None = worker if worker is not None else self._fork()

    def _fork(self) -> Worker:
        return Worker(sampler_service(self.root, **self.options))

    def counters(self) -> Counters:
        """The child's sample; inspector.roots.bounded.TimedOut or WorkerFailed when it does not
        answer in time (the TUI says so)."""
        with self._lock:
            if self._closed:
                raise WorkerFailed("closed")
            if self._worker is None or not self._worker.alive:
                if self._worker is not None:
                    self._worker.close()     # its child was ended by another of its workers
                self._worker = self._fork()
            worker, self._busy = self._worker, True
        try:
            return worker.call("sample", self.timeout)
        except WorkerFailed:
            worker.abandon()
            raise
        finally:
            with self._lock:
                self._busy = False
                if self._closed:
                    worker.close()

    def sample(self) -> Counters:
        """As counters(), but a child that does not answer gives counters that are all
        Unknown and name the sampler in `timed_out` (what `top` prints)."""
        try:
            return self.counters()
        except TimedOut as exc:
            return unknown_counters(self.root, f"the sampler {exc}")
        except WorkerFailed as exc:
            return unknown_counters(self.root, f"the sampler failed: {exc}")

    def close(self) -> None:
        """End the child (one stuck in the kernel stays behind, holding nothing of ours).
        Never closes a socket another thread waits on: that call closes it as it returns."""
        with self._lock:
            self._closed = True
            if not self._busy and self._worker is not None:
                self._worker.close()

    def __enter__(self) -> SamplerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sampler_service(root: HostRoot, **options: Any) -> Callable[[Any], Counters]:
    """What the child answers each request with: a sample of the sampler built here, before
    the fork (its state lives on in the child only)."""
    sampler = LiveSampler(root, **options)
    return lambda _request: sampler.sample()


def unknown_counters(root: HostRoot, reason: str) -> Counters:
    gone = Unknown(reason)
    return Counters(mono=time.monotonic(), wall=time.time(), source=root.label, uptime=gone,
                    disks=gone, topology={}, nics=gone, cpu=gone, load=gone, dstate=gone,
                    procs=gone, proc_io=gone, timed_out={"sampler": reason}, memory=gone,
                    pressure=gone, vmstat=gone, softnet=gone, filesystems=gone)
