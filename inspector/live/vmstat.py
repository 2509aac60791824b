"""/proc/vmstat and /proc/net/softnet_stat: the kernel counters the memory and network rules
read (major faults, swap-in, OOM kills, dirty and writeback pages; backlog drops).

vmstat's pg*/psw*/oom_kill are counters since boot; nr_dirty and nr_writeback are levels in
pages. softnet_stat has one line per CPU of hex columns: processed, dropped (the backlog
queue was full, netdev_max_backlog), time_squeeze (the budget ran out with work left).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from inspector.live.diskstats import counter_delta
from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4
VMSTAT_FIELDS = ("pgmajfault", "pswpin", "pswpout", "oom_kill", "nr_dirty", "nr_writeback")


@dataclass(slots=True)
class VmCounters:
    """Counters since boot (None: this kernel has no such line) and two levels in pages."""
    pgmajfault: int | None = None
    pswpin: int | None = None
    pswpout: int | None = None
    oom_kill: int | None = None      # 4.13+
    nr_dirty: int | None = None
    nr_writeback: int | None = None


@dataclass(slots=True)
class VmRates:
    pgmajfault_s: float | None
    pswpin_s: float | None
    pswpout_s: float | None
    oom_kills: int | None            # kills in the interval (a count, not a rate)
    dirty_kib: int | None            # at the end of the interval
    writeback_kib: int | None


@dataclass(slots=True)
class SoftnetCounters:
    processed: int
    dropped: int
    time_squeeze: int


@dataclass(slots=True)
class SoftnetRates:
    processed_s: float
    dropped_s: float
    time_squeeze_s: float


def parse_vmstat(text: str) -> VmCounters:
    out = VmCounters()
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in VMSTAT_FIELDS:
            try:
                setattr(out, name, int(value))
            except ValueError:
                pass
    return out


def read_vmstat(root: HostRoot) -> VmCounters | Unknown:
    try:
        return parse_vmstat(root.read_text("proc/vmstat", 1 << 16))
    except Unavailable as exc:
        return exc.unknown()


def parse_softnet(text: str) -> SoftnetCounters | Unknown:
    processed = dropped = squeeze = 0
    rows = 0
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 3:
            continue
        try:
            processed += int(cols[0], 16)
            dropped += int(cols[1], 16)
            squeeze += int(cols[2], 16)
        except ValueError:
            return Unknown("unparsable /proc/net/softnet_stat")
        rows += 1
    if not rows:
        return Unknown("empty /proc/net/softnet_stat")
    return SoftnetCounters(processed, dropped, squeeze)


def read_softnet(root: HostRoot) -> SoftnetCounters | Unknown:
    try:
        return parse_softnet(root.read_text("proc/net/softnet_stat", 1 << 16))
    except Unavailable as exc:
        return exc.unknown()


def _rate(prev: int | None, cur: int | None, interval: float) -> float | None:
    if prev is None or cur is None or interval <= 0:
        return None
    return counter_delta(prev, cur) / interval


def vm_rates(prev: VmCounters, cur: VmCounters, interval: float) -> VmRates:
    kills = None
    if prev.oom_kill is not None and cur.oom_kill is not None:
        kills = max(cur.oom_kill - prev.oom_kill, 0)
    return VmRates(_rate(prev.pgmajfault, cur.pgmajfault, interval),
                   _rate(prev.pswpin, cur.pswpin, interval),
                   _rate(prev.pswpout, cur.pswpout, interval), kills,
                   None if cur.nr_dirty is None else cur.nr_dirty * PAGE_KIB,
                   None if cur.nr_writeback is None else cur.nr_writeback * PAGE_KIB)


def softnet_rates(prev: SoftnetCounters, cur: SoftnetCounters, interval: float) -> SoftnetRates:
    if interval <= 0:
        return SoftnetRates(0.0, 0.0, 0.0)
    # a CPU going offline takes its row away: a fall is a restart, not a negative rate
    return SoftnetRates(max(cur.processed - prev.processed, 0) / interval,
                        max(cur.dropped - prev.dropped, 0) / interval,
                        max(cur.time_squeeze - prev.time_squeeze, 0) / interval)
