"""Recorded samples by hour of day or by day (`inspector history --samples`): per disk IOPS,
await and %util, and the CPU's iowait, steal and busy share, each as mean and standard
deviation across the intervals of the bucket ("vda is at 90% util every night from 3 to 8").

A bucket is the hour (or date) of the recorded host's clock at the end of each interval (its
timestamp plus the UTC offset stored with it), as `history` buckets probe runs. The sums are
done by SQLite over the integer columns (a week at 10 s with 20 busy disks is 1.2 million
rows); an interval in which a disk did nothing has no row and counts as zeros for it.
"""
from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, field

from inspector.record.store import WELL_FORMED, has_samples

_HOUR = "CAST((CAST(i.ts AS INTEGER) + i.tz_offset_s) % 86400 / 3600 AS INTEGER)"
_DAY = "date(CAST(i.ts AS INTEGER) + i.tz_offset_s, 'unixepoch')"


@dataclass
class Figure:
    """mean ±sd (sample standard deviation) across the intervals counted, and the largest."""
    mean: float | None
    stdev: float | None
    max: float | None


@dataclass
class CpuBucket:
    key: str                     # "03" (hour of day) or "2025-03-14" (day)
    intervals: int
    iowait: Figure               # percent of all CPUs' time
    steal: Figure
    busy: Figure                 # neither idle nor waiting for IO


@dataclass
class DiskBucket:
    key: str
    intervals: int               # intervals the device was there
    iops: Figure                 # reads + writes completed per second
    await_ms: Figure             # per interval with IO: its (r+w) ticks / (r+w) ops
    util: Figure                 # %util like iostat -x
    busy_intervals: int = 0      # intervals with IO (what the await figures count)


@dataclass
class SampleTables:
    by: str
    cpu: list[CpuBucket] = field(default_factory=list)
    disks: dict[str, list[DiskBucket]] = field(default_factory=dict)
    offsets: list[int] = field(default_factory=list)     # UTC offsets recorded


def _figure(n: int, total: float, squares: float, top: float | None) -> Figure:
    if n <= 0:
        return Figure(None, None, None)
    mean = total / n
    if n == 1:
        return Figure(mean, 0.0, top)
    var = max(squares - n * mean * mean, 0.0) / (n - 1)
    return Figure(mean, math.sqrt(var), top)


def sample_tables(conn: sqlite3.Connection, by: str = "hour", disks: list[str] | None = None,
                  partitions: bool = False) -> SampleTables:
    """The CPU table and one table per disk that did IO (partitions only when asked or
    named in `disks`; `disks` keeps only those names)."""
    out = SampleTables(by)
    if not has_samples(conn):
        return out
    key = _HOUR if by == "hour" else _DAY
    out.offsets = [int(o) for (o,) in conn.execute(
        f"SELECT DISTINCT tz_offset_s FROM sample_intervals WHERE {WELL_FORMED} ORDER BY 1")]
    total = " + ".join(f"i.cpu_{s}" for s in ("user", "nice", "system", "idle", "iowait",
                                               "irq", "softirq", "steal"))
    iowait = f"(100.0 * i.cpu_iowait / ({total}))"
    steal = f"(100.0 * i.cpu_steal / ({total}))"
    busy = f"(100.0 - 100.0 * (i.cpu_idle + i.cpu_iowait) / ({total}))"
    figures = ", ".join(f"SUM({x}), SUM({x} * {x}), MAX({x})" for x in (iowait, steal, busy))
    for row in conn.execute(f"SELECT {key} AS k, COUNT(*), {figures} FROM sample_intervals i "
                            f"WHERE i.cpu_user IS NOT NULL AND ({total}) > 0 AND {WELL_FORMED} "
                            "GROUP BY k ORDER BY k"):
        k, n = row[0], row[1]
        out.cpu.append(CpuBucket(_key(k, by), n, _figure(n, *row[2:5]), _figure(n, *row[5:8]),
                                 _figure(n, *row[8:11])))
    _disk_tables(conn, key, by, out, disks, partitions)
    return out


def _key(k, by: str) -> str:
    return f"{int(k):02d}" if by == "hour" else str(k)


def _disk_tables(conn: sqlite3.Connection, key: str, by: str, out: SampleTables,
                 wanted: list[str] | None, partitions: bool) -> None:
    import json
    names: dict[int, str] = {}
    for dev_id, name, info in conn.execute(
            "SELECT id, name, info FROM sample_devices WHERE kind = 'disk'"):
        try:
            kind = json.loads(info).get("kind")
        except (ValueError, AttributeError):
            kind = None
        if wanted is not None and name not in wanted:
            continue
        if wanted is None and kind == "part" and not partitions:
            continue
        names[dev_id] = name
    if not names:
        return
    # intervals each device was there: counted per device set, then per device
    members: dict[int, list[int]] = {}
    for set_id, text in conn.execute("SELECT id, members FROM sample_devsets"):
        members[set_id] = [int(t[1:]) for t in str(text).split()
                           if t[:1] == "d" and t[1:].isascii() and t[1:].isdigit()
                           and int(t[1:]) in names]
    present: dict[tuple[str, str], int] = {}
    for k, devset, n in conn.execute(f"SELECT {key} AS k, i.devset, COUNT(*) FROM "
                                     f"sample_intervals i WHERE {WELL_FORMED} "
                                     "GROUP BY k, i.devset"):
        for dev_id in members.get(devset, []):
            slot = (names[dev_id], _key(k, by))
            present[slot] = present.get(slot, 0) + n
    util = "MIN(100.0, d.io_ticks * 100000.0 / i.span_us)"
    iops = "((d.rd_ios + d.wr_ios) * 1e6 / i.span_us)"
    wait = ("(CASE WHEN d.rd_ios + d.wr_ios > 0 THEN (d.rd_ticks + d.wr_ticks) * 1.0 / "
            "(d.rd_ios + d.wr_ios) END)")
    sums: dict[tuple[str, str], list] = {}
    ids = ", ".join(str(i) for i in names)
    for row in conn.execute(
            f"SELECT {key} AS k, d.device_id, SUM({util}), SUM({util} * {util}), MAX({util}), "
            f"SUM({iops}), SUM({iops} * {iops}), MAX({iops}), COUNT({wait}), SUM({wait}), "
            f"SUM({wait} * {wait}), MAX({wait}) "
            "FROM sample_disks d JOIN sample_intervals i ON i.id = d.interval_id "
            f"WHERE d.device_id IN ({ids}) AND {WELL_FORMED} GROUP BY k, d.device_id"):
        slot = (names[row[1]], _key(row[0], by))
        acc = sums.setdefault(slot, [0.0] * 10)
        for j, v in enumerate(row[2:]):
            if v is None:
                continue
            acc[j] = max(acc[j], v) if j in (2, 5, 9) else acc[j] + v
    busy_names = {name for name, _ in sums}
    for name in sorted(busy_names, key=_natural):
        buckets = []
        for (dev, k), n in sorted(present.items(), key=lambda kv: kv[0][1]):
            if dev != name:
                continue
            s = sums.get((dev, k), [0.0] * 10)
            busy = int(s[6])
            buckets.append(DiskBucket(k, n, _figure(n, s[3], s[4], s[5]),
                                      _figure(busy, s[7], s[8], s[9] if busy else None),
                                      _figure(n, s[0], s[1], s[2]), busy))
        out.disks[name] = buckets


def _natural(name: str) -> tuple:
    """sda before sdb, nvme0n1 before nvme10n1."""
    import re
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))
