"""LiveSampler: one `Counters` of every live source per call; `rates(prev, cur)` turns two into
the live sample, `Rates`. Stateful parts (when a process entered D, when a NIC stopped
receiving, command lines and user names already read) live in the sampler, so keep one per
view (inspector.live.worker.SamplerProcess keeps it in a child process).

Each source (/proc/diskstats, /proc/stat, /sys/class/net ...) is read in a worker thread under
one deadline per sample (`read_timeout`; see inspector.roots.bounded.Reads: in turn in one thread, a
thread each once one is slow): a source that does not answer (a hung lxcfs serving
/proc/diskstats in a container) is Unknown("timed out ...") in that sample and listed in
`Counters.timed_out`; the others are kept. A hung source is not read again until its read
returns. Filesystem fill (statvfs) is swept in a thread of its own every FILESYSTEMS_EVERY
seconds and never waited for: a sample carries the last sweep."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

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
from inspector.live.filesystems import FilesystemSampler, FsUse
from inspector.live.findings import LiveFinding
from inspector.live.kernel_log import OomVictim, read_oom_victims
from inspector.live.mdsync import MdSync, read_md_sync
from inspector.live.memory import MemoryUse, read_memory
from inspector.live.netstats import (
    STALL_SECONDS,
    NicCounters,
    NicRates,
    StallDetector,
    all_nic_rates,
    read_nics,
)
from inspector.live.pressure import Pressure, read_pressure
from inspector.live.processes import (
    ProcessNames,
    ProcessRate,
    StatusCache,
    process_rates,
    read_processes,
    top_processes,
)
from inspector.live.procs import (
    TOP_IO,
    DStateProc,
    DStateTracker,
    ProcIo,
    ProcIoRate,
    ProcStat,
    list_pids,
    read_blocked_threads,
    top_io,
)
from inspector.live.vmstat import (
    SoftnetCounters,
    SoftnetRates,
    VmCounters,
    VmRates,
    read_softnet,
    read_vmstat,
    softnet_rates,
    vm_rates,
)
from inspector.live.waits import device_of, open_paths
from inspector.model import Finding, Unknown, known
from inspector.roots.bounded import Read, Reads
from inspector.roots.host import HostRoot, Unavailable

_SKIP = {"json_skip": True}
READ_TIMEOUT = 1.0       # seconds per sample for all sources together
FILESYSTEMS_EVERY = 1.0  # seconds between statvfs sweeps (each statvfs is bounded)
# what each source reads, as the user sees it (a hung one is named in `timed_out`)
SOURCES = {"diskstats": "/proc/diskstats", "topology": "/sys/block", "nics": "/sys/class/net",
           "cpu": "/proc/stat", "processes": "/proc/[pid]", "uptime": "/proc/uptime",
           "load": "/proc/loadavg", "memory": "/proc/meminfo", "pressure": "/proc/pressure",
           "vmstat": "/proc/vmstat", "softnet": "/proc/net/softnet_stat",
           "md": "/sys/block/md*/md", "kernel_log": "/dev/kmsg"}
Names = dict[int, tuple[str, str]]     # pid -> (user, redacted command line)


@dataclass
class Counters:
    """Every live counter at one moment (cumulative figures and levels), plus what the
    sampler's trackers concluded. Two of them make a `Rates`."""
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
    memory: MemoryUse | Unknown | None = None
    pressure: dict[str, Pressure | Unknown] | Unknown | None = None
    vmstat: VmCounters | Unknown | None = None
    softnet: SoftnetCounters | Unknown | None = None
    md: dict[str, MdSync] | Unknown | None = None
    filesystems: list[FsUse] | Unknown | None = None   # the last statvfs sweep
    filesystems_wall: float | None = None               # when that sweep ran
    oom_victims: list[OomVictim] | Unknown | None = None   # kills logged since the last sample
    names: Names = field(default_factory=dict, metadata=_SKIP)
    # when the process walk in `procs` began (a walk that finished late is used by the next
    # sample: its rates are over the walks' own times); None: as `mono`
    procs_mono: float | None = field(default=None, metadata=_SKIP)


@dataclass
class Rates:
    """The live sample: everything per second over the interval between two `Counters`, and
    the levels at its end. What `inspector top`, the TUI, the recorder and the live rules
    (inspector.health.live) read. Fields after `tz_offset_s` are None in an interval read back
    from a recording, which does not keep them."""
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
    wall_known: bool = True                      # see Counters.wall_known
    timed_out: dict[str, str] = field(default_factory=dict)   # see Counters.timed_out
    # an interval read back from a recording (inspector.record.store): the host's UTC offset
    # then, so its time prints as the host's clock read; None for live rates
    tz_offset_s: int | None = None
    memory: MemoryUse | Unknown | None = None
    pressure: dict[str, Pressure | Unknown] | Unknown | None = None
    vm: VmRates | Unknown | None = None
    softnet: SoftnetRates | Unknown | None = None
    md: list[MdSync] | Unknown | None = None
    filesystems: list[FsUse] | Unknown | None = None
    filesystems_wall: float | None = None
    # mountpoint -> the block device (diskstats name) it is mounted from
    fs_devices: dict[str, str] = field(default_factory=dict)
    oom_victims: list[OomVictim] | Unknown | None = None
    # the top processes by CPU, memory, IO and D-state time (what JSON and recordings keep)
    top_processes: list[ProcessRate] | Unknown | None = None
    # every process, sorted by CPU (the TUI's processes screen; not in JSON)
    processes: list[ProcessRate] | Unknown | None = field(default=None, metadata=_SKIP)
    # the live rules' active findings after this sample (inspector.health.live.LiveFinding;
    # set by LiveSession, [] where no rules ran)
    live_findings: list[LiveFinding] = field(default_factory=list)


class LiveSampler:
    """`LiveSampler(root).sample() -> Counters`. Reads go through `root` only, each source
    bounded by `read_timeout` seconds per sample."""

    def __init__(self, root: HostRoot, *, stall_seconds: float = STALL_SECONDS,
                 process_io: bool = True, read_timeout: float = READ_TIMEOUT,
                 filesystems_every: float = FILESYSTEMS_EVERY,
                 clock: Callable[[], tuple[float, float]] | None = None):
        """`clock() -> (monotonic, wall)`: the time of a sample (tests step a virtual one)."""
        self.root = root
        self.clock = clock
        self.process_io = process_io
        self.read_timeout = read_timeout
        self.filesystems_every = filesystems_every
        self.stall = StallDetector(stall_seconds)
        self.dstate = DStateTracker()
        self.names = ProcessNames(root)
        self._status: StatusCache = {}
        self._ticks = 0
        self._topology_key: tuple[str, ...] = ()
        self._topology: dict[str, DiskInfo] = {}
        self._reads = Reads()
        self._capture_gaps = {} if root.live else _capture_gaps(root)
        self._fs = FilesystemSampler(root)
        self._fs_read: Read | None = None
        self._fs_at = float("-inf")
        self._fs_last: list[FsUse] | Unknown | None = None
        self._fs_wall: float | None = None
        self._oom_seen: int | None = None        # oom_kill count at the last look
        self._oom_seq = -1                       # the last kernel log record reported

    def sample(self) -> Counters:
        root = self.root
        mono, wall = self.clock() if self.clock else (time.monotonic(), time.time())
        deadline = time.monotonic() + self.read_timeout
        wall_known = True
        if not root.live:     # a capture's moment, not ours (unknown for a plain tree: now)
            stamp = getattr(root, "sidecar_meta", {}).get("captured_at")
            wall_known = isinstance(stamp, (int, float)) and not isinstance(stamp, bool)
            if isinstance(stamp, (int, float)) and wall_known:
                wall = float(stamp)
        if mono - self._fs_at >= self.filesystems_every and root.live:
            # a thread of its own, never waited for: the sweep bounds each statvfs itself
            self._fs_read, self._fs_at = self._reads.start("filesystems", self._fs.sample), mono
        reads = self._reads.start_all({
            # cpu first: the process walk looks at its count of tasks blocked on IO
            "cpu": lambda: read_cpu(root),
            "diskstats": lambda: read_diskstats(root),
            "nics": lambda: read_nics(root),
            "uptime": lambda: read_uptime(root),
            "load": lambda: read_loadavg(root),
            "memory": lambda: read_memory(root),
            "pressure": lambda: read_pressure(root),
            "vmstat": lambda: read_vmstat(root),
            "softnet": lambda: read_softnet(root),
        })
        # the process walk is the costliest read and the one a saturated host slows most: in
        # a thread of its own, and a walk that finished after its sample's deadline is used
        # by the next sample (with the time it began: its rates stay right)
        reads["processes"] = self._reads.start(
            "processes", lambda: self._processes(mono, wall, reads["cpu"]), reuse_late=True)
        self._reads.settle(reads, deadline)
        timeouts: dict[str, str] = {}
        # the reads that need another's result start as soon as it is in, before the others
        # are waited for: behind a hung /proc/loadavg the sysfs walk began at the deadline
        # ("timed out after 0 s") and a capture lacked half of sys/. vmstat (the kernel's own
        # file) first: behind a hung /proc/diskstats (lxcfs) the OOM read began at the deadline
        got = {"vmstat": self._outcome("vmstat", reads["vmstat"], deadline, timeouts)}
        oom_read = self._start_oom_read(got["vmstat"])
        got["diskstats"] = self._outcome("diskstats", reads["diskstats"], deadline, timeouts)
        disks = got["diskstats"]
        key = tuple(disks) if known(disks) else None
        topology_read = md_read = None
        if key is not None and key != self._topology_key:    # walked when devices change
            topology_read = self._reads.start(
                "topology", lambda: (key, read_topology(root, key)), reuse_late=True)
        if key is not None and any(name.startswith("md") for name in key):
            devices = list(key)
            md_read = self._reads.start("md", lambda: read_md_sync(root, devices))
        got.update({name: self._outcome(name, read, deadline, timeouts)
                    for name, read in reads.items() if name not in got})
        if topology_read is not None:
            topology = self._outcome("topology", topology_read, deadline, timeouts)
            if known(topology) and key is not None and topology[0] == key:
                self._topology, self._topology_key = topology[1], key
        md: dict[str, MdSync] | Unknown | None = None
        if md_read is not None:
            md = self._outcome("md", md_read, deadline, timeouts)
        if self._fs_read is not None and self._fs_read.call.done.is_set():
            self._fs_last, self._fs_wall = self._fs_read.peek(), wall
            self._fs_read = None
        nics = got["nics"]
        findings = self.stall.update(nics, mono, wall) if known(nics) else []
        procs = got["processes"]
        names: Names = {}
        procs_mono: float | None = None
        if known(procs):
            procs, dstate, proc_io, names, procs_mono = procs
            if known(dstate):      # (judged by the live rules: live.tasks.dstate)
                self._locate_dstate(dstate, disks)
        else:
            dstate = proc_io = procs
        vmstat = got["vmstat"]
        return Counters(mono=mono, wall=wall, source=root.label, uptime=got["uptime"],
                        disks=disks, topology=self._topology, nics=nics, cpu=got["cpu"],
                        load=got["load"], dstate=dstate, findings=findings,
                        procs=procs, proc_io=proc_io, wall_known=wall_known,
                        timed_out=timeouts, memory=got["memory"], pressure=got["pressure"],
                        vmstat=vmstat, softnet=got["softnet"], md=md,
                        filesystems=self._fs_last, filesystems_wall=self._fs_wall,
                        oom_victims=self._oom_victims(oom_read, deadline, timeouts),
                        names=names, procs_mono=procs_mono)

    def _processes(self, mono: float, wall: float, cpu_read: Read) -> tuple | Unknown:
        """(stats, D-state tasks, IO counters, names) or the Unknown of the /proc listing."""
        root = self.root
        pids = list_pids(root)
        if not known(pids):
            return pids
        self._ticks += 1
        # a capture's one moment of IO gives no rate (top_io says so), but a fixture tree a
        # test advances does: the processes table reads it from any root
        procs, denied = read_processes(root, pids, with_io=self.process_io,
                                       status_cache=self._status,
                                       tick=self._ticks)
        # Threads are walked only while the kernel counts tasks blocked on IO: the stuck
        # IO thread of a database shows, without a thread walk on every quiet sample. (Read
        # in turn, first, /proc/stat is done by now or soon; when it hangs, no walk: reading it
        # here again hung the walk too, and the D-state table with it.)
        cpu_read.call.done.wait(self._reads.patience)
        cpu = cpu_read.peek()
        blocked = known(cpu) and bool(cpu.procs_blocked)
        threads = read_blocked_threads(root, procs) if blocked else []
        dstate = self.dstate.update(root, procs, mono, wall, threads)
        proc_io: dict[int, ProcIo] | Unknown
        if not root.live:
            proc_io = Unknown("capture: no live data")
        elif not self.process_io:
            proc_io = Unknown("not sampled")
        else:
            proc_io = {pid: ProcIo(st.read_bytes, st.write_bytes) for pid, st in procs.items()
                       if st.read_bytes is not None and st.write_bytes is not None}
            if not proc_io and denied:
                proc_io = Unknown("permission denied reading /proc/[pid]/io (needs root)")
        names = self.names
        names.next_sample()
        out = {pid: (names.user(st.uid), names.cmdline(st)) for pid, st in procs.items()}
        names.forget_except(procs)
        return procs, dstate, proc_io, out, mono

    def _locate_dstate(self, dstate: list[DStateProc], disks: object) -> None:
        """The device each D task does IO on, by its open files (a few readlinks per task)."""
        if not dstate or not isinstance(disks, dict):
            return
        mounts: list[tuple[str, str]] = []
        if isinstance(self._fs_last, list):
            by_majmin = {f"{c.major}:{c.minor}": name for name, c in disks.items()}
            mounts = sorted(((fs.mountpoint, by_majmin.get(fs.majmin, "")) for fs in
                             self._fs_last), key=lambda m: -len(m[0]))
        paths: dict[int, list[str]] = {}
        for d in dstate:
            if d.tgid not in paths:
                paths[d.tgid] = open_paths(self.root, d.tgid)
            d.device = device_of(paths[d.tgid], disks, mounts)

    def _start_oom_read(self, vmstat: object) -> tuple[bool, Read] | None:
        """The kernel log's read when oom_kill rose (or, on the first sample, to mark the kills
        logged before it as old: (True, read)); None when there is nothing to read."""
        kills = vmstat.oom_kill if isinstance(vmstat, VmCounters) else None
        seen, self._oom_seen = self._oom_seen, kills
        first = seen is None and bool(kills)          # only to mark what is old
        rose = kills is not None and seen is not None and kills > seen
        if not (first or rose):
            return None
        return first, self._reads.start("kernel_log", lambda: read_oom_victims(self.root))

    def _oom_victims(self, started: tuple[bool, Read] | None, deadline: float,
                     timeouts: dict[str, str]) -> list[OomVictim] | Unknown | None:
        """Kills the kernel logged since the last sample (None: not read)."""
        if started is None:
            return None
        only_mark_old, read = started
        victims = self._outcome("kernel_log", read, deadline, timeouts)
        if not isinstance(victims, list):
            return None if only_mark_old else victims
        new = [v for v in victims if v.seq > self._oom_seq]
        if victims:
            self._oom_seq = max(v.seq for v in victims)
        return None if only_mark_old else new

    def _outcome(self, name: str, read: Read, deadline: float, timeouts: dict[str, str]) -> Any:
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


def rates(prev: Counters, cur: Counters, top: int = TOP_IO) -> Rates:
    """Per-second figures between two snapshots of the same sampler."""
    return _rates(prev, cur, cur.mono - prev.mono, top)


def since_boot(snap: Counters, top: int = TOP_IO) -> Rates | Unknown:
    """Averages since boot from one snapshot (what iostat's first report shows): the only
    rates a single-sample capture can give."""
    if not known(snap.uptime) or snap.uptime <= 0:
        return Unknown("uptime unknown, so no averages since boot")
    zero = Counters(mono=snap.mono - snap.uptime, wall=snap.wall - snap.uptime,
                    source=snap.source, uptime=0.0, disks=_zero_disks(snap.disks),
                    topology=snap.topology, nics=_zero_nics(snap.nics), cpu=_zero_cpu(snap.cpu),
                    load=snap.load, dstate=snap.dstate, procs={}, proc_io={})
    out = _rates(zero, snap, snap.uptime, top)
    out.top_io = snap.proc_io if not known(snap.proc_io) else Unknown("rates need two samples")
    out.processes = out.top_processes = None
    out.since_boot = True
    out.wall_known = snap.wall_known
    out.timed_out = dict(snap.timed_out)
    return out


def _unknown_of(*values: object) -> Unknown:
    """The first Unknown among values one of which is (where a rate cannot be computed)."""
    return next((v for v in values if isinstance(v, Unknown)), Unknown("not read"))


def _rates(prev: Counters, cur: Counters, interval: float, top: int) -> Rates:
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
        io = top_io(prev.proc_io, cur.proc_io, prev.procs, cur.procs,
                    _procs_span(prev, cur, interval), top)
    else:
        io = _unknown_of(cur.proc_io, prev.proc_io, cur.procs, prev.procs)
    processes: list[ProcessRate] | Unknown
    if known(prev.procs) and known(cur.procs):
        span = _procs_span(prev, cur, interval)
        processes = (process_rates(prev.procs, cur.procs, span, cur.dstate, cur.names)
                     if span > 0 else Unknown("the same process walk as the last sample"))
    else:
        processes = _unknown_of(cur.procs, prev.procs)
    return Rates(interval=interval, wall=cur.wall, disks=disks, disk_changes=changes, nics=nics,
                 cpu=cpu, load=cur.load, dstate=cur.dstate, top_io=io,
                 findings=list(cur.findings), timed_out=dict(cur.timed_out),
                 memory=cur.memory, pressure=cur.pressure,
                 vm=_pair(prev.vmstat, cur.vmstat, VmCounters, vm_rates, interval),
                 softnet=_pair(prev.softnet, cur.softnet, SoftnetCounters, softnet_rates,
                               interval),
                 md=list(cur.md.values()) if isinstance(cur.md, dict) else cur.md,
                 filesystems=cur.filesystems, filesystems_wall=cur.filesystems_wall,
                 fs_devices=fs_devices(cur.filesystems, cur.disks), oom_victims=cur.oom_victims,
                 top_processes=top_processes(processes) if isinstance(processes, list)
                 else processes, processes=processes)


def _procs_span(prev: Counters, cur: Counters, interval: float) -> float:
    """Seconds between the two samples' process walks (a late walk keeps its own time)."""
    if prev.procs_mono is None or cur.procs_mono is None:
        return interval
    return cur.procs_mono - prev.procs_mono


def fs_devices(filesystems: object, disks: object) -> dict[str, str]:
    """mountpoint -> the diskstats name of the device it is mounted from (by major:minor)."""
    if not isinstance(filesystems, list) or not isinstance(disks, dict):
        return {}
    by_majmin = {f"{c.major}:{c.minor}": name for name, c in disks.items()}
    return {fs.mountpoint: by_majmin[fs.majmin] for fs in filesystems
            if fs.majmin in by_majmin}


_Counts = TypeVar("_Counts")
_Rate = TypeVar("_Rate")


def _pair(prev: object, cur: object, kind: type[_Counts],
          rate: Callable[[_Counts, _Counts, float], _Rate], interval: float
          ) -> _Rate | Unknown | None:
    """rate(prev, cur, interval) when both are of `kind`; else the Unknown (or None) why not."""
    if isinstance(prev, kind) and isinstance(cur, kind):
        return rate(prev, cur, interval)
    if isinstance(cur, Unknown) or isinstance(prev, Unknown):
        return _unknown_of(cur, prev)
    return None


def _zero_disks(disks: dict[str, DiskCounters] | Unknown) -> dict[str, DiskCounters] | Unknown:
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


def _zero_nics(nics: dict[str, NicCounters] | Unknown) -> dict[str, NicCounters] | Unknown:
    if not known(nics):
        return nics
    return {name: NicCounters(name, n.operstate, n.carrier,
                              tuple(None if v is None else 0 for v in n.counters), n.ifindex)
            for name, n in nics.items()}


def _zero_cpu(cpu: CpuCounters | Unknown) -> CpuCounters | Unknown:
    if not known(cpu):
        return cpu
    zero = (0,) * 8
    return CpuCounters(zero, {k: zero for k in cpu.per_cpu},
                       None if cpu.ctxt is None else 0, None if cpu.intr is None else 0,
                       cpu.procs_running, cpu.procs_blocked)
