"""The live sampler in a child process, for commands that must be able to exit (`inspector top`).

LiveSampler bounds each source by a deadline, but a read that never returns leaves its thread
in the kernel, and a process with such a thread cannot finish exiting (see inspector.bounded):
`top` on a host whose /proc/diskstats hangs would print its blocks and then never end, with
Ctrl-C or --count alike. Here the sampler and its threads live in a forked child; the parent
gets each Snapshot through a pipe and exits whenever it likes.
"""
from __future__ import annotations

import time

from inspector.bounded import TimedOut, Worker, WorkerFailed
from inspector.host import HostRoot
from inspector.live.sampler import READ_TIMEOUT, LiveSampler, Snapshot
from inspector.model import Unknown

# beyond the sampler's own deadline: pickling a snapshot of a few hundred processes takes
# about a millisecond, a child paged out on a loaded host can take longer to wake
ANSWER_GRACE = 1.0


class SamplerProcess:
    """`sample() -> Snapshot` like LiveSampler's (same options), from a child process. A
    child that does not answer in time is abandoned and the snapshot is all Unknown; the next
    call starts a new child (the D-state and NIC-stall trackers then start afresh)."""

    def __init__(self, root: HostRoot, **options):
        self.root = root
        self.options = options
        self.read_timeout = options.get("read_timeout", READ_TIMEOUT)
        self._worker: Worker | None = None

    def sample(self) -> Snapshot:
        if self._worker is None or not self._worker.alive:
            sampler = LiveSampler(self.root, **self.options)   # lives on in the child only
            self._worker = Worker(lambda _request: sampler.sample())
        try:
            return self._worker.call("sample", self.read_timeout + ANSWER_GRACE)
        except TimedOut as exc:
            return unknown_snapshot(self.root, f"the sampler {exc}")
        except WorkerFailed as exc:
            self._worker.abandon()
            return unknown_snapshot(self.root, f"the sampler failed: {exc}")

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()

    def __enter__(self) -> SamplerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def unknown_snapshot(root: HostRoot, reason: str) -> Snapshot:
    gone = Unknown(reason)
    return Snapshot(mono=time.monotonic(), wall=time.time(), source=root.label, uptime=gone,
                    disks=gone, topology={}, nics=gone, cpu=gone, load=gone, dstate=gone,
                    procs=gone, proc_io=gone, timed_out={"sampler": reason})
