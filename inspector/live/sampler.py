"""LiveSampler: one Snapshot of every live counter per call; `rates(prev, cur)` turns two into
Rates. Stateful parts (when a process entered D, when a NIC stopped receiving) live in the
sampler, so keep one sampler per screen or per `inspector top` run.

Each source (/proc/diskstats, /proc/stat, /sys/class/net ...) is read in a worker thread under
one deadline per sample (`read_timeout`; see inspector.bounded.Reads: in turn in one thread, a
thread each once one is slow): a source that does not answer (a hung lxcfs serving
/proc/diskstats in a container) is Unknown("timed out ...") in that sample and listed in
`Snapshot.timed_out`; the others are kept. A hung source is not read again until its read
returns. The threads stay in this process: `inspector top` runs the sampler in a child process
(inspector.live.worker) so that it can always exit."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from inspector.bounded import Read, Reads
from inspector.host import HostRoot, Unavailable
from inspector.live.cpustat import CpuCounters, CpuRates, LoadAvg, cpu_rates, read_cpu, read_loadavg
from inspector.live.diskstats import (
    DiskChanges,
    DiskCounters,
    DiskInfo,
    DiskRates,
    disk_rates,
    read_diskstats,
    read_topology,
)
from inspector.live.netstats import (
    STALL_SECONDS,
    NicCounters,
    NicRates,
    StallDetector,
    all_nic_rates,
    read_nics,
)
from inspector.live.procs import (
    TOP_IO,
    DStateProc,
    DStateTracker,
    ProcIo,
    ProcIoRate,
    ProcStat,
    dstate_findings,
    list_pids,
    read_blocked_threads,
    read_io,
    read_stats,
    top_io,
)
from inspector.model import Finding, Unknown, known

_SKIP = {"json_skip": True}
READ_TIMEOUT = 1.0       # seconds per sample for all sources together
# what each source reads, as the user sees it (a hung one is named in `timed_out`)
SOURCES = {"diskstats": "/proc/diskstats", "topology": "/sys/block", "nics": "/sys/class/net",
           "cpu": "/proc/stat", "processes": "/proc/[pid]", "uptime": "/proc/uptime",
           "load": "/proc/loadavg"}


@dataclass
class Snapshot:
    """Cumulative counters at one moment (plus what the sampler's trackers concluded)."""
    mono: float                                  # time.monotonic() of the sample
    wall: float                                  # time.time() of the sample
    source: str                                  # "live" or the capture path
    uptime: float | Unknown
    disks: dict[str, DiskCounters] | Unknown
    topology: dict[str, DiskInfo]
    nics: dict[str, NicCounters] | Unknown
    cpu: CpuCounters | Unknown
    load: LoadAvg | Unknown
    dstate: list[DStateProc] | Unknown
    findings: list[Finding] = field(default_factory=list)
    procs: dict[int, ProcStat] | Unknown = field(default_factory=dict, metadata=_SKIP)
    proc_io: dict[int, ProcIo] | Unknown = field(default_factory=dict, metadata=_SKIP)
    # False: `wall` is when we read a tree that does not say when it was taken (a plain sysroot
    # or fixture directory, no capture sidecar), not when its counters were
    wall_known: bool = True
    # sources that did not answer in time: path (SOURCES) -> "timed out after 1 s" ...
    timed_out: dict[str, str] = field(default_factory=dict)


@dataclass
class Rates:
    """Everything per second over the interval between two snapshots."""
    interval: float                              # seconds
    wall: float                                  # end of the interval, unix time
    disks: list[DiskRates] | Unknown
    disk_changes: DiskChanges
    nics: list[NicRates] | Unknown
    cpu: CpuRates | Unknown
    load: LoadAvg | Unknown
    dstate: list[DStateProc] | Unknown
    top_io: list[ProcIoRate] | Unknown
    findings: list[Finding] = field(default_factory=list)
    since_boot: bool = False                     # averages since boot from one snapshot
    wall_known: bool = True                      # see Snapshot.wall_known
    timed_out: dict[str, str] = field(default_factory=dict)   # see Snapshot.timed_out
    # an interval read back from a recording (inspector.sample_store): the host's UTC offset
    # then, so its time prints as the host's clock read; None for live rates
    tz_offset_s: int | None = None


class LiveSampler:
    """`LiveSampler(root).sample() -> Snapshot`. Reads go through `root` only, each source
    bounded by `read_timeout` seconds per sample."""

    def __init__(self, root: HostRoot, *, stall_seconds: float = STALL_SECONDS,
                 process_io: bool = True, read_timeout: float = READ_TIMEOUT):
        self.root = root
        self.process_io = process_io
        self.read_timeout = read_timeout
        self.stall = StallDetector(stall_seconds)
        self.dstate = DStateTracker()
        self._topology_key: tuple[str, ...] = ()
        self._topology: dict[str, DiskInfo] = {}
        self._reads = Reads()
        self._capture_gaps = {} if root.live else _capture_gaps(root)

    def sample(self) -> Snapshot:
        root = self.root
        mono, wall = time.monotonic(), time.time()
        deadline = mono + self.read_timeout
        wall_known = True
        if not root.live:     # a capture's moment, not ours (unknown for a plain tree: now)
            stamp = getattr(root, "sidecar_meta", {}).get("captured_at")
            wall_known = isinstance(stamp, (int, float)) and not isinstance(stamp, bool)
            if isinstance(stamp, (int, float)) and wall_known:
                wall = float(stamp)
        reads = self._reads.start_all({
            # cpu first: the process walk looks at its count of tasks blocked on IO
            "cpu": lambda: read_cpu(root),
            "diskstats": lambda: read_diskstats(root),
            "nics": lambda: read_nics(root),
            "processes": lambda: self._processes(mono, wall),
            "uptime": lambda: read_uptime(root),
            "load": lambda: read_loadavg(root),
        })
        self._reads.settle(reads, deadline)
        timeouts: dict[str, str] = {}
        got = {name: self._outcome(name, read, deadline, timeouts)
               for name, read in reads.items()}
        disks = got["diskstats"]
        if known(disks):
            key = tuple(disks)
            if key != self._topology_key:      # sysfs is walked only when devices change
                topology = self._outcome("topology", self._reads.start(
                    "topology", lambda: (key, read_topology(root, key)), reuse_late=True),
                    deadline, timeouts)
                if known(topology) and topology[0] == key:
                    self._topology, self._topology_key = topology[1], key
        nics = got["nics"]
        findings = self.stall.update(nics, mono, wall) if known(nics) else []
        procs = got["processes"]
        if known(procs):
            procs, dstate, proc_io = procs
            if known(dstate):
                findings += dstate_findings(dstate)
        else:
            dstate = proc_io = procs
        return Snapshot(mono=mono, wall=wall, source=root.label, uptime=got["uptime"],
                        disks=disks, topology=self._topology, nics=nics, cpu=got["cpu"],
                        load=got["load"], dstate=dstate, findings=findings,
                        procs=procs, proc_io=proc_io, wall_known=wall_known,
                        timed_out=timeouts)

    def _processes(self, mono: float, wall: float) -> tuple | Unknown:
        """(stats, D-state tasks, IO counters) or the Unknown of the /proc listing."""
        root = self.root
        pids = list_pids(root)
        if not known(pids):
            return pids
        procs = read_stats(root, pids)
        # Threads are walked only while the kernel counts tasks blocked on IO: the stuck
        # IO thread of a database shows, without a thread walk on every quiet sample. (Read
        # in turn, /proc/stat is done by now; when it hangs, no walk.)
        cpu = self._reads.peek("cpu")
        blocked = known(cpu) and bool(cpu.procs_blocked)
        threads = read_blocked_threads(root, procs) if blocked else []
        dstate = self.dstate.update(root, procs, mono, wall, threads)
        proc_io = read_io(root, pids) if self.process_io else Unknown("not sampled")
        return procs, dstate, proc_io

    def _outcome(self, name: str, read: Read, deadline: float, timeouts: dict[str, str]):
        value = read.result(deadline)
        label = SOURCES[name]
        if read.timed_out:
            timeouts[label] = read.timed_out
            return Unknown(f"{label} {read.timed_out}")
        gap = self._capture_gaps.get(label)
        if gap:      # what the capture holds there (an empty file: an existence test) is not it
            return Unknown(f"{label} not collected when captured: {gap}")
        return value


def _capture_gaps(root: HostRoot) -> dict[str, str]:
    """Sources the capture's own sample could not read: "live /proc/diskstats" -> reason in
    the capture's list of what it lacks (see inspector capture)."""
    incomplete = root.fact("capture", "incomplete", dict)
    if not isinstance(incomplete, dict):
        return {}
    return {key[len("live "):]: reason for key, reason in incomplete.items()
            if isinstance(key, str) and key.startswith("live ") and isinstance(reason, str)}


def read_uptime(root: HostRoot) -> float | Unknown:
    try:
        return float(root.read_line("proc/uptime").split()[0])
    except Unavailable as exc:
        return exc.unknown()
    except (ValueError, IndexError):
        return Unknown("unparsable /proc/uptime")


def rates(prev: Snapshot, cur: Snapshot, top: int = TOP_IO) -> Rates:
    """Per-second figures between two snapshots of the same sampler."""
    return _rates(prev, cur, cur.mono - prev.mono, top)


def since_boot(snap: Snapshot, top: int = TOP_IO) -> Rates | Unknown:
    """Averages since boot from one snapshot (what iostat's first report shows): the only
    rates a single-sample capture can give."""
    if not known(snap.uptime) or snap.uptime <= 0:
        return Unknown("uptime unknown, so no averages since boot")
    zero = Snapshot(mono=snap.mono - snap.uptime, wall=snap.wall - snap.uptime,
                    source=snap.source, uptime=0.0, disks=_zero_disks(snap.disks),
                    topology=snap.topology, nics=_zero_nics(snap.nics), cpu=_zero_cpu(snap.cpu),
                    load=snap.load, dstate=snap.dstate, procs={}, proc_io={})
    out = _rates(zero, snap, snap.uptime, top)
    out.top_io = snap.proc_io if not known(snap.proc_io) else Unknown("rates need two samples")
    out.since_boot = True
    out.wall_known = snap.wall_known
    out.timed_out = dict(snap.timed_out)
    return out


def _unknown_of(*values: object) -> Unknown:
    """The first Unknown among values one of which is (where a rate cannot be computed)."""
    return next((v for v in values if isinstance(v, Unknown)), Unknown("not read"))


def _rates(prev: Snapshot, cur: Snapshot, interval: float, top: int) -> Rates:
    disks: list[DiskRates] | Unknown
    if known(prev.disks) and known(cur.disks):
        disks, changes = disk_rates(prev.disks, cur.disks, interval, cur.topology)
    else:
        disks = _unknown_of(cur.disks, prev.disks)
        changes = DiskChanges()
    nics: list[NicRates] | Unknown
    if known(prev.nics) and known(cur.nics):
        nics = all_nic_rates(prev.nics, cur.nics, interval)
    else:
        nics = _unknown_of(cur.nics, prev.nics)
    cpu: CpuRates | Unknown
    if known(prev.cpu) and known(cur.cpu):
        cpu = cpu_rates(prev.cpu, cur.cpu, interval)
    else:
        cpu = _unknown_of(cur.cpu, prev.cpu)
    io: list[ProcIoRate] | Unknown
    if known(prev.proc_io) and known(cur.proc_io) and known(cur.procs) and known(prev.procs):
        io = top_io(prev.proc_io, cur.proc_io, prev.procs, cur.procs, interval, top)
    else:
        io = _unknown_of(cur.proc_io, prev.proc_io, cur.procs, prev.procs)
    return Rates(interval=interval, wall=cur.wall, disks=disks, disk_changes=changes, nics=nics,
                 cpu=cpu, load=cur.load, dstate=cur.dstate, top_io=io,
                 findings=list(cur.findings), timed_out=dict(cur.timed_out))


def _zero_disks(disks):
    if not known(disks):
        return disks
    out = {}
    for name, c in disks.items():
        z = DiskCounters(name, c.major, c.minor, *([0] * 11))
        if c.dc_ios is not None:
            z.dc_ios = z.dc_merges = z.dc_sectors = z.dc_ticks = 0
        if c.fl_ios is not None:
            z.fl_ios = z.fl_ticks = 0
        out[name] = z
    return out


def _zero_nics(nics):
    if not known(nics):
        return nics
    return {name: NicCounters(name, n.operstate, n.carrier,
                              tuple(None if v is None else 0 for v in n.counters), n.ifindex)
            for name, n in nics.items()}


def _zero_cpu(cpu):
    if not known(cpu):
        return cpu
    zero = (0,) * 8
    return CpuCounters(zero, {k: zero for k in cpu.per_cpu},
                       None if cpu.ctxt is None else 0, None if cpu.intr is None else 0,
                       cpu.procs_running, cpu.procs_blocked)
