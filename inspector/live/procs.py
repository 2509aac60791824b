"""Processes: who sits in D state (uninterruptible, usually IO) and who moves the most bytes.

D state comes from /proc/[pid]/stat read through the root, so fixture trees and captures work.
How long a process has been in D is not in /proc: the tracker remembers when it first saw each
(pid, start time) in D and forgets it as soon as a sample finds it elsewhere. Being in D at
every sample is not being stuck: a dd or a database doing one IO after another sleeps in D for
each of them. So, as the kernel's hung-task detector does, the tracker also remembers the
task's context-switch count (/proc/PID/status): a task that switched since the last sample has
run in between, and its time in D starts again.
Per-process IO comes from /proc/[pid]/io (read_bytes/write_bytes: what reached the block
layer), live only: a capture holds one moment, and rates need two.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from inspector.live.waits import read_stack, wait_point
from inspector.model import Finding, Level, Unknown
from inspector.roots.host import HostRoot, Unavailable

STAT_LIMIT = 4096
TOP_IO = 5
DSTATE_WARN_SECONDS = 30.0    # short D waits are normal IO; half a minute is a stuck task


@dataclass(slots=True)
class ProcStat:
    pid: int           # the task id (a thread's tid for threads)
    comm: str
    state: str
    starttime: int     # clock ticks after boot: tells a reused pid apart
    threads: int = 1
    tgid: int = 0      # the process a thread belongs to (0: the task is the process)
    # per-process figures (inspector.live.processes fills them; 0/None from a bare stat read)
    flags: int = 0
    majflt: int = 0
    cpu_ticks: int = 0            # utime + stime, clock ticks, all threads
    rss_kib: int = 0
    uid: int | None = None
    swap_kib: int | None = None
    read_bytes: int | None = None   # /proc/PID/io, None when unreadable
    write_bytes: int | None = None


@dataclass(slots=True)
class DStateProc:
    pid: int                 # task id: the process, or the thread when tgid differs
    tgid: int                # the process it belongs to
    comm: str
    wchan: str | Unknown
    seconds: float           # in D without running for at least this long (0 when first seen,
                             # and again after each sample that finds it switched in between)
    since: float             # wall-clock time it was first seen in D
    wait: str = ""           # where it waits: the first telling frame of /proc/PID/stack,
                             # else wchan (inspector.live.waits.wait_point)
    device: str | None = None   # the block device it does IO on, when its open files say


@dataclass(slots=True)
class ProcIo:
    read_bytes: int
    write_bytes: int


@dataclass(slots=True)
class ProcIoRate:
    pid: int
    comm: str
    read_bytes_s: float
    write_bytes_s: float


def parse_proc_stat(pid: int, text: str | bytes) -> ProcStat | None:
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogateescape")
    # comm may hold spaces and parentheses: it ends at the LAST ')'
    open_at, close_at = text.find(b"("), text.rfind(b")")
    if open_at < 0 or close_at < open_at:
        return None
    rest = text[close_at + 2:].split()
    if len(rest) < 20:
        return None
    try:
        starttime, threads = int(rest[19]), int(rest[17])
    except ValueError:
        return None
    return ProcStat(pid, text[open_at + 1:close_at].decode("utf-8", "replace"),
                    rest[0].decode("ascii", "replace"), starttime, threads)


def list_pids(root: HostRoot) -> list[int] | Unknown:
    try:
        return [int(e) for e in root.listdir("proc") if e.isdigit()]
    except Unavailable as exc:
        return exc.unknown()


def read_stats(root: HostRoot, pids: list[int]) -> dict[int, ProcStat]:
    out: dict[int, ProcStat] = {}
    for pid in pids:
        try:
            text = root.read_bytes(f"proc/{pid}/stat", STAT_LIMIT)
        except Unavailable:
            continue            # exited between the listing and the read
        st = parse_proc_stat(pid, text)
        if st is not None:
            out[pid] = st
    return out


def read_blocked_threads(root: HostRoot, stats: dict[int, ProcStat]) -> list[ProcStat]:
    """Threads in D inside multi-threaded processes (a database's IO thread stuck while its
    main thread sleeps). /proc lists processes only, so this walks proc/PID/task/."""
    out: list[ProcStat] = []
    for st in list(stats.values()):
        if st.threads <= 1:
            continue
        for entry in root.try_listdir(f"proc/{st.pid}/task"):
            if not entry.isdigit() or int(entry) == st.pid:
                continue
            try:
                text = root.read_bytes(f"proc/{st.pid}/task/{entry}/stat", STAT_LIMIT)
            except Unavailable:
                continue
            task = parse_proc_stat(int(entry), text)
            if task is not None and task.state == "D":
                task.tgid = st.pid
                out.append(task)
    return out


def read_switches(root: HostRoot, task_dir: str) -> int | None:
    """voluntary + nonvoluntary context switches of a task (None when unreadable: a capture
    or a tree without status files, where time in D is then counted from sightings alone)."""
    try:
        text = root.read_bytes(f"{task_dir}/status", 8192)
    except Unavailable:
        return None
    total, found = 0, 0
    for line in text.splitlines():
        if line.startswith((b"voluntary_ctxt_switches:", b"nonvoluntary_ctxt_switches:")):
            try:
                total += int(line.split(b":", 1)[1])
                found += 1
            except ValueError:
                return None
    return total if found == 2 else None


@dataclass
class DStateTracker:
    """Remembers since when each process has been in D without running (see the module)."""
    # (pid, starttime) -> (mono, wall) it was first seen in D this time, and its switch count
    _first_seen: dict[tuple[int, int], tuple[float, float, int | None]] = field(
        default_factory=dict)

    def update(self, root: HostRoot, stats: dict[int, ProcStat], mono: float | None = None,
               wall: float | None = None,
               threads: Sequence[ProcStat] = ()) -> list[DStateProc]:
        mono = time.monotonic() if mono is None else mono
        wall = time.time() if wall is None else wall
        out: list[DStateProc] = []
        seen: set[tuple[int, int]] = set()
        for st in [*stats.values(), *threads]:
            if st.state != "D":
                continue
            key = (st.pid, st.starttime)
            seen.add(key)
            task_dir = f"proc/{st.tgid}/task/{st.pid}" if st.tgid else f"proc/{st.pid}"
            switches = read_switches(root, task_dir)
            first = self._first_seen.get(key)
            if first is None or (switches is not None and first[2] is not None
                                 and switches != first[2]):
                first = (mono, wall, switches)     # new in D, or it ran since the last sample
            elif first[2] is None and switches is not None:
                first = (first[0], first[1], switches)
            self._first_seen[key] = first
            wchan = root.try_line(f"{task_dir}/wchan")
            if wchan == "0" or wchan == "":
                wchan = Unknown("kernel hides wchan (kallsyms restricted)")
            out.append(DStateProc(st.pid, st.tgid or st.pid, st.comm, wchan, mono - first[0],
                                  first[1], wait_point(wchan, read_stack(root, task_dir))))
        for key in [k for k in self._first_seen if k not in seen]:
            del self._first_seen[key]
        out.sort(key=lambda d: (-d.seconds, d.pid))
        return out


def dstate_findings(dstate: list[DStateProc],
                    threshold: float = DSTATE_WARN_SECONDS) -> list[Finding]:
    out = []
    for d in dstate:
        if d.seconds < threshold:
            continue
        started = time.strftime("%H:%M:%S", time.localtime(d.since))
        who = f"{d.comm} (pid {d.pid})" if d.tgid == d.pid else \
            f"{d.comm} (thread {d.pid} of pid {d.tgid})"
        wchan = d.wchan if isinstance(d.wchan, str) else "unknown"
        out.append(Finding(
            level=Level.WARN, subject=f"pid {d.tgid}", code="proc.dstate",
            message=f"{who} has been in D state (uninterruptible) for {d.seconds:.0f} s, "
                    f"since {started}",
            evidence=[f"state D in every sample since {started}, without a context switch "
                      "in between (not one IO after another: the same wait)", f"wchan {wchan}"],
            advice="A task stuck in D waits on IO or a kernel lock it cannot be interrupted "
                   "from: look at the device under it (%util, await), hung NFS/FUSE mounts, "
                   "and the kernel log for 'blocked for more than' messages."))
    return out


def read_io(root: HostRoot, pids: Iterable[int]) -> dict[int, ProcIo] | Unknown:
    """Block-layer bytes per process. Unknown on a capture, and when nothing is readable
    (other users' /proc/[pid]/io needs root)."""
    if not root.live:
        return Unknown("capture: no live data")
    out: dict[int, ProcIo] = {}
    denied = 0
    for pid in pids:
        try:
            fields = root.read_bytes(f"proc/{pid}/io", STAT_LIMIT).split()
        except Unavailable as exc:
            denied += exc.reason == "permission denied"
            continue
        # rchar wchar syscr syscw read_bytes write_bytes cancelled_write_bytes, "label: value"
        if fields[8:9] == [b"read_bytes:"] and fields[10:11] == [b"write_bytes:"]:
            try:
                out[pid] = ProcIo(int(fields[9]), int(fields[11]))
            except ValueError:
                pass
    if not out and denied:
        return Unknown("permission denied reading /proc/[pid]/io (needs root)")
    return out


def top_io(prev: dict[int, ProcIo], cur: dict[int, ProcIo], prev_stats: dict[int, ProcStat],
           stats: dict[int, ProcStat], interval: float, limit: int = TOP_IO) -> list[ProcIoRate]:
    """The processes that moved the most bytes in the interval (the same process, not a
    reused pid, in both samples)."""
    if interval <= 0:
        return []
    rates: list[ProcIoRate] = []
    for pid, c in cur.items():
        p = prev.get(pid)
        st, pst = stats.get(pid), prev_stats.get(pid)
        if p is None or st is None or pst is None or pst.starttime != st.starttime:
            continue
        rd, wr = c.read_bytes - p.read_bytes, c.write_bytes - p.write_bytes
        if rd <= 0 and wr <= 0:
            continue
        rates.append(ProcIoRate(pid, st.comm, max(rd, 0) / interval, max(wr, 0) / interval))
    rates.sort(key=lambda r: -(r.read_bytes_s + r.write_bytes_s))
    return rates[:limit]
