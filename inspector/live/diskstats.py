"""/proc/diskstats: parsing, iostat -x arithmetic, and the md/dm member topology.

Line layout (Documentation/admin-guide/iostats.rst): major minor name, then 11 counters on
every kernel, 4 discard counters from 4.18 (18 fields in all), 2 flush counters from 5.5 (20).
The figures follow sysstat's iostat -x: per second over the interval, sectors are 512 bytes,
awaits are milliseconds per completed request, aqu-sz is weighted milliseconds per
millisecond, %util is busy milliseconds per interval (capped at 100 like iostat).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

FIELD_COUNTS = (14, 18, 20)
_U32 = 1 << 32
_U64 = 1 << 64

# Member much busier than its array: the md0-looks-idle trap.
BUSY_MEMBER_UTIL = 50.0       # member %util at least this ...
BUSY_MEMBER_MARGIN = 25.0     # ... and this many points above the array's %util


class DiskstatsParseError(ValueError):
    """/proc/diskstats text that is not in the kernel's format (line number and why)."""


@dataclass(slots=True)
class DiskCounters:
    """One line of /proc/diskstats. Discard and flush counters are None on older kernels."""
    name: str
    major: int
    minor: int
    rd_ios: int
    rd_merges: int
    rd_sectors: int
    rd_ticks: int
    wr_ios: int
    wr_merges: int
    wr_sectors: int
    wr_ticks: int
    in_flight: int
    io_ticks: int
    time_in_queue: int
    dc_ios: int | None = None
    dc_merges: int | None = None
    dc_sectors: int | None = None
    dc_ticks: int | None = None
    fl_ios: int | None = None
    fl_ticks: int | None = None


def parse_diskstats(text: str) -> dict[str, DiskCounters]:
    """Counters by device name. Raises DiskstatsParseError naming the first bad line."""
    out: dict[str, DiskCounters] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        n = len(fields)
        if n not in FIELD_COUNTS:
            raise DiskstatsParseError(
                f"/proc/diskstats line {lineno}: expected 14, 18 or 20 fields, got {n}")
        try:
            major = int(fields[0])
            minor = int(fields[1])
            values = [int(v) for v in fields[3:]]
        except ValueError:
            raise DiskstatsParseError(
                f"/proc/diskstats line {lineno}: non-numeric counter in {line[:80]!r}") from None
        if major < 0 or minor < 0 or min(values) < 0:
            raise DiskstatsParseError(f"/proc/diskstats line {lineno}: negative counter")
        name = fields[2]
        if name in out:
            raise DiskstatsParseError(f"/proc/diskstats line {lineno}: duplicate device {name}")
        out[name] = DiskCounters(name, major, minor, *values)
    return out


def read_diskstats(root: HostRoot) -> dict[str, DiskCounters] | Unknown:
    try:
        text = read_whole(root, "proc/diskstats")
    except Unavailable as exc:
        return exc.unknown()
    try:
        return parse_diskstats(text)
    except DiskstatsParseError as exc:
        return Unknown(str(exc))


def read_whole(root: HostRoot, rel: str, start: int = 65536) -> str:
    """Read a /proc file whose size we cannot know beforehand: a small buffer first (a big one
    costs an allocation per read), grown while the read fills it."""
    limit = start
    while True:
        data = root.read_bytes(rel, limit)
        if len(data) < limit or limit >= 64 * 1024 * 1024:
            return data.decode("utf-8", "replace")
        limit *= 4


def counter_delta(prev: int, cur: int) -> int:
    """Increase of a kernel counter that may have wrapped. Counters printed from 32-bit values
    (the millisecond fields on older kernels, everything on 32-bit kernels) wrap at 2^32,
    unsigned long on 64-bit kernels at 2^64."""
    if cur >= prev:
        return cur - prev
    if prev < _U32 and cur < _U32:
        return cur + _U32 - prev
    return cur + _U64 - prev


# ----------------------------------------------------------------------------- topology
@dataclass
class DiskInfo:
    """What a device is and what it stands on, from sysfs (read once per device set)."""
    name: str
    kind: str                       # disk, part, md, dm, loop, ...
    parent: str | None = None       # partitions: their disk
    members: list[str] = field(default_factory=list)  # md/dm: slaves
    alias: str | None = None        # dm: the mapper name (vg0-data), what `iostat -N` prints


def read_topology(root: HostRoot, names: Iterable[str]) -> dict[str, DiskInfo]:
    """Kind, parent disk and slaves of each device name, through the root."""
    whole = set(root.try_listdir("sys/block"))
    info: dict[str, DiskInfo] = {}
    parents: dict[str, str] = {}
    for disk in whole:
        base = _resolve(root, f"sys/block/{disk}")
        for entry in root.try_listdir(base):
            # partitions are named after their disk: sda1, nvme0n1p1, mmcblk0p2
            if entry.startswith(disk) and root.exists(f"{base}/{entry}/partition"):
                parents[entry] = disk
    for name in names:
        if name in parents:
            info[name] = DiskInfo(name, "part", parent=parents[name])
            continue
        members = (root.try_listdir(_resolve(root, f"sys/block/{name}/slaves"))
                   if name in whole else [])
        kind = _kind(name)
        alias = root.try_line(f"sys/block/{name}/dm/name") if kind == "dm" else None
        info[name] = DiskInfo(name, kind, members=members,
                              alias=alias if isinstance(alias, str) and alias else None)
    return info


def _resolve(root: HostRoot, rel: str) -> str:
    """sysfs is symlinks all the way down; resolve them inside the root (captures too)."""
    try:
        return root.resolve(rel)
    except Unavailable:
        return rel


def _kind(name: str) -> str:
    for prefix, kind in (("md", "md"), ("dm-", "dm"), ("loop", "loop"), ("zram", "zram"),
                         ("nvme", "nvme"), ("sr", "rom")):
        if name.startswith(prefix):
            return kind
    return "disk"


# ----------------------------------------------------------------------------- rates
@dataclass(slots=True)
class DiskRates:
    """iostat -x figures for one device over one interval (names as iostat prints them)."""
    name: str
    kind: str
    parent: str | None
    r_s: float
    w_s: float
    rkB_s: float
    wkB_s: float
    rrqm_s: float
    wrqm_s: float
    r_await: float
    w_await: float
    rareq_sz: float
    wareq_sz: float
    aqu_sz: float
    util: float
    d_s: float | Unknown
    dkB_s: float | Unknown
    drqm_s: float | Unknown
    d_await: float | Unknown
    dareq_sz: float | Unknown
    f_s: float | Unknown
    f_await: float | Unknown
    in_flight: int
    members: list[str] = field(default_factory=list)
    busy_members: list[str] = field(default_factory=list)   # much busier than this array
    alias: str | None = None                                # dm mapper name


_NO_DISCARD = Unknown("kernel before 4.18 has no discard counters")
_NO_FLUSH = Unknown("kernel before 5.5 has no flush counters")


def device_rates(p: DiskCounters, c: DiskCounters, interval: float,
                 info: DiskInfo | None = None) -> DiskRates:
    """iostat -x for one device between two samples `interval` seconds apart."""
    rd = counter_delta(p.rd_ios, c.rd_ios)
    wr = counter_delta(p.wr_ios, c.wr_ios)
    rsec = counter_delta(p.rd_sectors, c.rd_sectors)
    wsec = counter_delta(p.wr_sectors, c.wr_sectors)
    ms = interval * 1000.0
    util = counter_delta(p.io_ticks, c.io_ticks) / ms * 100.0 if ms > 0 else 0.0
    per_s = 1.0 / interval if interval > 0 else 0.0
    # the discard and flush columns come as a group (kernels 4.18 and 5.5): one present, all
    d_s: float | Unknown
    dkB_s: float | Unknown
    drqm_s: float | Unknown
    d_await: float | Unknown
    dareq_sz: float | Unknown
    if p.dc_ios is not None and c.dc_ios is not None:
        dc = counter_delta(p.dc_ios, c.dc_ios)
        dsec = counter_delta(p.dc_sectors or 0, c.dc_sectors or 0)
        d_s, dkB_s = dc * per_s, dsec / 2.0 * per_s
        drqm_s = counter_delta(p.dc_merges or 0, c.dc_merges or 0) * per_s
        d_await = counter_delta(p.dc_ticks or 0, c.dc_ticks or 0) / dc if dc else 0.0
        dareq_sz = dsec / 2.0 / dc if dc else 0.0
    else:
        d_s = dkB_s = drqm_s = d_await = dareq_sz = _NO_DISCARD
    f_s: float | Unknown
    f_await: float | Unknown
    if p.fl_ios is not None and c.fl_ios is not None:
        fl = counter_delta(p.fl_ios, c.fl_ios)
        f_s = fl * per_s
        f_await = counter_delta(p.fl_ticks or 0, c.fl_ticks or 0) / fl if fl else 0.0
    else:
        f_s = f_await = _NO_FLUSH
    return DiskRates(
        name=c.name, kind=info.kind if info else _kind(c.name),
        parent=info.parent if info else None,
        r_s=rd * per_s, w_s=wr * per_s,
        rkB_s=rsec / 2.0 * per_s, wkB_s=wsec / 2.0 * per_s,
        rrqm_s=counter_delta(p.rd_merges, c.rd_merges) * per_s,
        wrqm_s=counter_delta(p.wr_merges, c.wr_merges) * per_s,
        r_await=counter_delta(p.rd_ticks, c.rd_ticks) / rd if rd else 0.0,
        w_await=counter_delta(p.wr_ticks, c.wr_ticks) / wr if wr else 0.0,
        rareq_sz=rsec / 2.0 / rd if rd else 0.0,
        wareq_sz=wsec / 2.0 / wr if wr else 0.0,
        aqu_sz=counter_delta(p.time_in_queue, c.time_in_queue) / ms if ms > 0 else 0.0,
        util=min(util, 100.0),
        d_s=d_s, dkB_s=dkB_s, drqm_s=drqm_s, d_await=d_await, dareq_sz=dareq_sz,
        f_s=f_s, f_await=f_await, in_flight=c.in_flight,
        members=list(info.members) if info else [],
        alias=info.alias if info else None,
    )


@dataclass
class DiskChanges:
    appeared: list[str] = field(default_factory=list)   # no previous sample: no rate yet
    vanished: list[str] = field(default_factory=list)


def disk_rates(prev: dict[str, DiskCounters], cur: dict[str, DiskCounters], interval: float,
               topology: dict[str, DiskInfo] | None = None
               ) -> tuple[list[DiskRates], DiskChanges]:
    """Rates of every device present in both samples (a device whose major:minor changed, or
    whose counters started over, was replaced: it counts as new), in /proc/diskstats order,
    and which devices came or went."""
    topology = topology or {}
    out: list[DiskRates] = []
    changes = DiskChanges()
    for name, c in cur.items():
        p = prev.get(name)
        if p is None or (p.major, p.minor) != (c.major, c.minor) or restarted(p, c, interval):
            changes.appeared.append(name)
            continue
        out.append(device_rates(p, c, interval, topology.get(name)))
    changes.vanished = [name for name in prev if name not in cur]
    flag_busy_members(out)
    return out, changes


MAX_IOPS = 10_000_000     # no device completes more: a "wrap" implying more is a restart


def restarted(p: DiskCounters, c: DiskCounters, interval: float) -> bool:
    """The device was torn down and made again under the same name and number (md0 stopped
    and re-assembled, a SCSI disk removed and rescanned): its counters start from 0. Told from
    a counter wrap by what the wrap would imply: more IOs in the interval than any device does
    (a real 32-bit wrap goes from just under 2^32 to a little above 0)."""
    limit = MAX_IOPS * max(interval, 1.0)
    return any(cur < prev and counter_delta(prev, cur) > limit
               for prev, cur in ((p.rd_ios, c.rd_ios), (p.wr_ios, c.wr_ios)))


def flag_busy_members(rates: list[DiskRates]) -> None:
    """On each md/dm array, name the members far busier than the array itself."""
    by_name = {r.name: r for r in rates}
    for r in rates:
        if not r.members:
            continue
        r.busy_members = [m for m in r.members if m in by_name
                          and by_name[m].util >= BUSY_MEMBER_UTIL
                          and by_name[m].util >= r.util + BUSY_MEMBER_MARGIN]
