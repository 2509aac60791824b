"""Which processes' /proc/PID/io the live loop reads, and the counters of the others.

Producing a process's io file costs the host's kernel about as much as its stat, and on a
quiet host most processes did not run since the last sample: their counters cannot have
moved (a task's IO is accounted while it runs: submitting a read, dirtying a page). So each
frame reads the io of the user-space processes that
- are new (their first counters, with the frame that lists them),
- ran lately: their stat changed, or their io moved, within the last ACTIVE_FOR samples,
and every SWEEP_EVERY-th frame reads every process's; the others keep the counters last read.
Kernel threads' io is not read otherwise: the samplers skip it. The loop keeps the list; it is
told what joins and leaves it (a few pids a sample, not the whole list: the host's shell reads
its requests a byte at a time).

What this costs in accuracy: a process whose IO starts shows it one sample late (its stat
tells it ran only in the frame after), and one that does IO while running less than a clock
tick per sample (its stat does not change) shows it at the next sweep, the IO of up to
SWEEP_EVERY samples in one; from then on its io moves, and it is read every sample.
"""
from __future__ import annotations

ACTIVE_FOR = 3           # samples a process's io is read after its stat or io last moved
SWEEP_EVERY = 20         # frames between two reads of every process's io


class ProcessIo:
    def __init__(self, active_for: int = ACTIVE_FOR, sweep_every: int = SWEEP_EVERY):
        self.active_for = active_for
        self.sweep_every = sweep_every
        self._stat: dict[str, bytes] = {}       # pid -> its stat in the last frame
        self._io: dict[str, bytes] = {}         # pid -> its io file as last read
        self._until: dict[str, int] = {}        # pid -> the sample its io is read until
        self._unreadable: set[str] = set()      # asked, not answered (another user's, no root)
        self._named: set[str] = set()           # the loop's list
        self._sample = 0

    def update(self, stats: dict[str, bytes], ios: dict[str, bytes]) -> None:
        """A frame's user-space processes (pid -> stat) and the io files it holds."""
        self._sample += 1
        first = not self._stat           # nothing to compare with: nobody counts as running
        for pid, stat in stats.items():
            io = ios.get(pid)
            moved = io is not None and pid in self._io and io != self._io[pid]
            if not first and (moved or stat != self._stat.get(pid)):
                self._until[pid] = self._sample + self.active_for
            if io is not None:
                self._io[pid] = io
                self._unreadable.discard(pid)
            elif pid in self._named:
                self._unreadable.add(pid)      # read again at the sweeps only
        self._stat = dict(stats)
        for cache in (self._io, self._until):
            for pid in [p for p in cache if p not in stats]:
                del cache[pid]
        self._unreadable &= set(stats)

    def sweep_due(self) -> bool:
        """Whether the next frame reads every process's io."""
        return (self._sample + 1) % self.sweep_every == 0

    def changes(self) -> tuple[list[str], list[str]]:
        """(pids to add to the loop's list, pids to take out): the list the next frame reads."""
        wanted = {pid for pid in self._stat if pid not in self._unreadable and (
            pid not in self._io or self._until.get(pid, 0) > self._sample)}
        add, remove = wanted - self._named, self._named - wanted
        self._named = wanted
        return sorted(add, key=int), sorted(remove, key=int)

    def named(self) -> set[str]:
        return set(self._named)

    def io(self, pid: str) -> bytes | None:
        """The io file last read for `pid` (None: never read, or gone)."""
        return self._io.get(pid)
