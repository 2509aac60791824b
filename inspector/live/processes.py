"""Per-process figures for "who is doing it": CPU %, RSS, swap, IO bytes/s, major faults,
time in D state, user and the (redacted) command line, threads folded into their process.

One pass over /proc per sample reads, per process, `stat` (state, CPU ticks, RSS, major
faults; a process's stat already sums its threads) and, for user-space processes, `status`
(Uid, VmSwap) and `io` (read_bytes/write_bytes: what reached the block layer). Kernel
threads (PF_KTHREAD) skip the last two: no memory of their own and IO accounted elsewhere.
The command line is read once per process (pid + start time) and redacted with
inspector.text.redact's rules, as captures redact the kernel's; user names come from etc/passwd
of the same root. Everything goes through the HostRoot, so fixture trees work.

Cost on the live root: about 25 µs of CPU per process per sample (tests/bench/
bench_samplers.py prints the figure for ~1000 processes).
"""
from __future__ import annotations

import enum
import heapq
import os
from dataclasses import dataclass

from inspector.live.procs import STAT_LIMIT, DStateProc, ProcStat
from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable
from inspector.text.redact import redact_cmdline

PF_KTHREAD = 0x00200000
STATUS_LIMIT = 8192
CMDLINE_LIMIT = 4096
CMDLINES_PER_SAMPLE = 64     # new command lines read per sample (see ProcessNames)
STATUS_EVERY = 5         # samples between status reads of a process whose RSS stands still
TOP_PROCESSES = 10       # per sort key in `top --json` and the recorded sample
# ticks per second of /proc/PID/stat times: the live kernel's, else Linux's usual USER_HZ
try:
    CLK_TCK = os.sysconf("SC_CLK_TCK") or 100
except (ValueError, OSError, AttributeError):
    CLK_TCK = 100
PAGE_KIB = (os.sysconf("SC_PAGE_SIZE") // 1024) if hasattr(os, "sysconf") else 4


class SortKey(enum.StrEnum):
    """What a processes table is sorted by (largest first)."""
    CPU = "cpu"
    MEM = "mem"          # RSS + swap
    IO = "io"            # read + write bytes/s
    DSTATE = "dstate"    # seconds in D now


@dataclass(slots=True)
class ProcessRate:
    """One process over one interval: what btop's and glances' process lists show."""
    pid: int
    comm: str
    user: str                    # name from the root's etc/passwd, else the uid as text
    state: str                   # R S D Z T I ... at the end of the interval
    cpu_pct: float               # percent of one CPU (200 = two CPUs busy), threads summed
    rss_kib: int
    swap_kib: int | None         # VmSwap; None when unreadable (kernel threads, no root)
    read_bytes_s: float | None   # None when /proc/PID/io is unreadable
    write_bytes_s: float | None
    majflt_s: float              # major page faults per second
    dstate_s: float              # seconds its longest task has been in D (0: none in D)
    threads: int
    cmdline: str                 # redacted; "[comm]" for kernel threads

    @property
    def io_bytes_s(self) -> float:
        return (self.read_bytes_s or 0.0) + (self.write_bytes_s or 0.0)

    @property
    def mem_kib(self) -> int:
        return self.rss_kib + (self.swap_kib or 0)


SORT_VALUE = {
    SortKey.CPU: lambda p: p.cpu_pct,
    SortKey.MEM: lambda p: p.mem_kib,
    SortKey.IO: lambda p: p.io_bytes_s,
    SortKey.DSTATE: lambda p: p.dstate_s,
}


def sort_processes(procs: list[ProcessRate], key: SortKey | str = SortKey.CPU,
                   limit: int | None = None) -> list[ProcessRate]:
    """Largest first by `key` (cpu, mem, io, dstate), ties by pid."""
    value = SORT_VALUE[SortKey(key)]
    if limit is not None and limit < len(procs):
        # a few of many (top_processes asks for 10 by each key every second): the same
        # order as the sort below, without sorting them all
        return heapq.nlargest(limit, procs, key=lambda p: (value(p), -p.pid))
    out = sorted(procs, key=lambda p: (-value(p), p.pid))
    return out if limit is None else out[:limit]


def top_processes(procs: list[ProcessRate], limit: int = TOP_PROCESSES) -> list[ProcessRate]:
    """The top `limit` by each sort key, once each: what a recording or one JSON line keeps."""
    seen: dict[int, ProcessRate] = {}
    for key in SortKey:
        for p in sort_processes(procs, key, limit):
            if SORT_VALUE[key](p) > 0:
                seen.setdefault(p.pid, p)
    return sort_processes(list(seen.values()), SortKey.CPU)


# ------------------------------------------------------------------------------ reading
def parse_stat_fields(pid: int, text: bytes) -> ProcStat | None:
    """/proc/PID/stat to a ProcStat with the per-process figures (fields per proc(5))."""
    open_at, close_at = text.find(b"("), text.rfind(b")")
    if open_at < 0 or close_at < open_at:
        return None
    rest = text[close_at + 2:].split()
    if len(rest) < 22:
        return None
    try:
        st = ProcStat(pid, text[open_at + 1:close_at].decode("utf-8", "replace"),
                      rest[0].decode("ascii", "replace"), int(rest[19]), int(rest[17]))
        st.flags = int(rest[6])
        st.majflt = int(rest[9])
        st.cpu_ticks = int(rest[11]) + int(rest[12])
        st.rss_kib = int(rest[21]) * PAGE_KIB
    except ValueError:
        return None
    return st


def _status_fields(text: bytes) -> tuple[int | None, int | None]:
    """(real uid, VmSwap KiB) from /proc/PID/status."""
    uid = swap = None
    at = text.find(b"\nUid:")
    if at >= 0:
        try:
            uid = int(text[at + 5:text.index(b"\n", at + 5)].split()[0])
        except (ValueError, IndexError):
            pass
    at = text.find(b"\nVmSwap:")
    if at >= 0:
        try:
            swap = int(text[at + 8:text.index(b"\n", at + 8)].split()[0])
        except (ValueError, IndexError):
            pass
    return uid, swap


def _io_fields(text: bytes) -> tuple[int, int] | None:
    fields = text.split()
    # rchar wchar syscr syscw read_bytes write_bytes cancelled_write_bytes, "label: value"
    if fields[8:9] == [b"read_bytes:"] and fields[10:11] == [b"write_bytes:"]:
        try:
            return int(fields[9]), int(fields[11])
        except ValueError:
            return None
    return None


StatusCache = dict[tuple[int, int], tuple[int, int | None, int | None]]


def read_processes(root: HostRoot, pids: list[int], *, with_io: bool = True,
                   status_cache: StatusCache | None = None, tick: int = 0
                   ) -> tuple[dict[int, ProcStat], bool]:
    """Every process's stat (+ status and io for user-space ones). Returns the stats and
    whether any io read was refused for lack of permission (other users' need root).

    `status_cache` ((pid, start) -> (rss, uid, VmSwap)) spares the costliest read, status
    (40% of the time): it is read again when the process's RSS changed, and otherwise every
    STATUS_EVERY samples (by `tick`, spread over the pids), so swap figures lag by at most
    that many samples for a process whose resident size stands still."""
    out: dict[int, ProcStat] = {}
    denied = False
    read = root.read_bytes
    cache = status_cache if status_cache is not None else {}
    for pid in pids:
        base = f"proc/{pid}/"
        try:
            st = parse_stat_fields(pid, read(base + "stat", STAT_LIMIT))
        except Unavailable:
            continue            # exited between the listing and the read
        if st is None:
            continue
        out[pid] = st
        if st.flags & PF_KTHREAD:
            st.uid = 0
            continue
        key = (pid, st.starttime)
        known = cache.get(key)
        if known is not None and known[0] == st.rss_kib and (pid + tick) % STATUS_EVERY:
            st.uid, st.swap_kib = known[1], known[2]
        else:
            try:
                st.uid, st.swap_kib = _status_fields(read(base + "status", STATUS_LIMIT))
            except Unavailable:
                pass
            cache[key] = (st.rss_kib, st.uid, st.swap_kib)
        if with_io:
            try:
                io = _io_fields(read(base + "io", STAT_LIMIT))
            except Unavailable as exc:
                denied = denied or exc.reason == "permission denied"
                io = None
            if io is not None:
                st.read_bytes, st.write_bytes = io
    if status_cache is not None and len(cache) > len(out):
        for stale in [k for k in cache if k[0] not in out or out[k[0]].starttime != k[1]]:
            del cache[stale]
    return out, denied


class ProcessNames:
    """Command lines (redacted) and user names, remembered per process and per uid so a
    sample reads only what is new. At most `budget` command lines are read per sample (call
    `next_sample()` between samples): the first sample of a host with a thousand processes
    would otherwise spend ~100 ms on them; those left wait for the next samples and show
    their comm meanwhile."""

    def __init__(self, root: HostRoot, budget: int = CMDLINES_PER_SAMPLE):
        self.root = root
        self.budget = budget
        self._left = budget
        self._cmdlines: dict[tuple[int, int], str] = {}
        self._users: dict[int, str] | None = None

    def next_sample(self) -> None:
        self._left = self.budget

    def cmdline(self, st: ProcStat) -> str:
        key = (st.pid, st.starttime)
        text = self._cmdlines.get(key)
        if text is None:
            if self._left <= 0:
                return st.comm
            self._left -= 1
            text = self._read_cmdline(st)
            self._cmdlines[key] = text
        return text

    def _read_cmdline(self, st: ProcStat) -> str:
        if st.flags & PF_KTHREAD:
            return f"[{st.comm}]"
        try:
            raw = self.root.read_bytes(f"proc/{st.pid}/cmdline", CMDLINE_LIMIT)
        except Unavailable:
            return f"[{st.comm}]"
        words = [w.decode("utf-8", "replace") for w in raw.rstrip(b"\0").split(b"\0")]
        if not any(words):
            return f"[{st.comm}]"          # a zombie, or a process that cleared its args
        return redact_cmdline(" ".join(_quoted(w) for w in words))[0]

    def forget_except(self, alive: dict[int, ProcStat]) -> None:
        """Drop what belongs to processes that are gone: memory follows the process count."""
        if len(self._cmdlines) > len(alive):
            self._cmdlines = {k: v for k, v in self._cmdlines.items()
                              if (st := alive.get(k[0])) is not None and st.starttime == k[1]}

    def user(self, uid: int | None) -> str:
        if uid is None:
            return "?"
        if self._users is None or uid not in self._users:
            self._users = self._read_passwd()
        return self._users.get(uid, str(uid))

    def _read_passwd(self) -> dict[int, str]:
        users: dict[int, str] = {}
        text = self.root.try_text("etc/passwd")
        if isinstance(text, str):
            for line in text.splitlines():
                parts = line.split(":")
                if len(parts) > 2 and parts[2].isdigit():
                    users.setdefault(int(parts[2]), parts[0])
        return users


def _quoted(word: str) -> str:
    """An argument with spaces in quotes, so redaction sees one parameter (as a shell would)."""
    return f'"{word}"' if (" " in word or "\t" in word) and '"' not in word else word


# ------------------------------------------------------------------------------ rates
def process_rates(prev: dict[int, ProcStat], cur: dict[int, ProcStat], interval: float,
                  dstate: list[DStateProc] | Unknown, names: dict[int, tuple[str, str]]
                  ) -> list[ProcessRate]:
    """Every process present in `cur`, its rates over the interval (0 for one new since
    `prev`: it has no start to count from). `names`: pid -> (user, cmdline)."""
    hz = CLK_TCK
    longest_d: dict[int, float] = {}
    if isinstance(dstate, list):
        for d in dstate:
            longest_d[d.tgid] = max(longest_d.get(d.tgid, 0.0), d.seconds)
    out: list[ProcessRate] = []
    for pid, st in cur.items():
        p = prev.get(pid)
        same = p is not None and p.starttime == st.starttime and interval > 0
        cpu = rd = wr = None
        majflt = 0.0
        if same and p is not None:
            cpu = max(st.cpu_ticks - p.cpu_ticks, 0) / hz / interval * 100.0
            majflt = max(st.majflt - p.majflt, 0) / interval
            if st.read_bytes is not None and p.read_bytes is not None:
                rd = max(st.read_bytes - p.read_bytes, 0) / interval
            if st.write_bytes is not None and p.write_bytes is not None:
                wr = max(st.write_bytes - p.write_bytes, 0) / interval
        elif st.read_bytes is not None:
            rd = wr = 0.0
        user, cmdline = names.get(pid, ("?", f"[{st.comm}]"))
        out.append(ProcessRate(pid, st.comm, user, st.state, round(cpu or 0.0, 2), st.rss_kib,
                               st.swap_kib, rd, wr, round(majflt, 2),
                               round(longest_d.get(pid, 0.0), 1), st.threads, cmdline))
    return sort_processes(out, SortKey.CPU)
