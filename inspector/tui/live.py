"""Adapter from the live samplers (inspector.live) to what the screens show.

The screens need normalised figures per sample (iostat -x per disk with its place in the md/dm
stack, NIC rates with link state, the CPU split, load, pressure, memory, filesystem fill, top
IO processes and D-state tasks); this module is the only place that knows the samplers' API.
`make_sampler(root)` returns None on a capture (no live data); `unavailable_reason(root)`
says why in plain words. Every part of a LiveView that could not be read is Unknown(reason),
which the panels show as it is ("statvfs timed out after 1 s", "no PSI in this kernel").

Every source is read under a deadline, and one that does not answer is named and not read
again until it returns: LiveSampler's own (/proc/diskstats, /proc/stat ...), /proc/meminfo and
/proc/pressure here, each statvfs and /proc/self/mountinfo in FilesystemSampler. The sampler
runs in a child process for the session (LiveProcess, inspector.tui.forked): a read stuck in
the kernel leaves a thread there, never in the TUI, which can then always exit.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from inspector.bounded import Reads
from inspector.host import HostRoot
from inspector.live.filesystems import FilesystemSampler
from inspector.live.memory import read_memory
from inspector.live.pressure import read_pressure
from inspector.live.sampler import READ_TIMEOUT, Snapshot
from inspector.model import Unknown
from inspector.tui.forked import ForkedService

FILESYSTEMS_EVERY = 5.0    # seconds between statvfs sweeps: fill changes slowly
# beyond the sampler's deadline: pickling a view, a child paged out on a loaded host
ANSWER_GRACE = 1.0
# the sources read here besides LiveSampler's, as the panels name them
EXTRA_SOURCES = {"memory": "/proc/meminfo", "pressure": "/proc/pressure"}


@dataclass
class DiskRate:
    name: str
    util: float | None          # %util like iostat -x
    await_ms: float | None      # average of r_await/w_await weighted by ops
    r_s: float | None = None
    w_s: float | None = None
    rkb_s: float | None = None
    wkb_s: float | None = None
    aqu_sz: float | None = None
    kind: str = "disk"          # disk, part, md, dm, loop, zram, nvme, rom
    parent: str | None = None   # a partition's disk
    members: list[str] = field(default_factory=list)      # md/dm: what it stands on
    busy_members: list[str] = field(default_factory=list)
    alias: str | None = None    # dm: the mapper name

    @property
    def idle(self) -> bool:
        return not (self.util or self.r_s or self.w_s)


@dataclass
class NicRate:
    name: str
    rx_bps: float | None        # bytes per second
    tx_bps: float | None
    errors_s: float | None = None
    drops_s: float | None = None
    stalled: bool = False
    operstate: str | None = None
    carrier: bool | None = None

    @property
    def up(self) -> bool:
        """Passing traffic is possible: operstate up (lo and some virtual NICs say "unknown"
        with a carrier)."""
        return self.operstate == "up" or (self.operstate == "unknown" and self.carrier is True)


@dataclass
class CpuView:
    """Percent of all CPUs: user (with nice), system (with irq and softirq), iowait, steal."""
    user: float
    system: float
    iowait: float
    steal: float
    idle: float
    cpus: int = 0


@dataclass
class LiveView:
    interval: float
    disks: list[DiskRate] = field(default_factory=list)
    nics: list[NicRate] = field(default_factory=list)
    iowait: float | None = None  # percent of all CPUs
    steal: float | None = None
    busy: float | None = None
    notes: list[str] = field(default_factory=list)
    findings: list = field(default_factory=list)   # live findings (NIC stall, D state ...)
    cpu: CpuView | Unknown | None = None
    load: Any = None                 # inspector.live.LoadAvg | Unknown
    pressure: Any = None             # {resource: Pressure | Unknown} | Unknown
    memory: Any = None               # MemoryUse | Unknown
    filesystems: Any = None          # [FsUse] | Unknown
    top_io: Any = None               # [ProcIoRate] | Unknown
    dstate: Any = None               # [DStateProc] | Unknown
    root_device: str | None = None   # the device "/" is mounted from (vda, dm-0, md0 ...)
    disks_error: str | None = None   # why there are no disk rates
    nics_error: str | None = None
    # sources that did not answer in time: path -> "timed out after 1 s" ...
    timed_out: dict[str, str] = field(default_factory=dict)

    def busiest_disk(self) -> DiskRate | None:
        known = [(d.util, d) for d in self.disks if d.util is not None]
        return max(known, key=lambda pair: pair[0])[1] if known else None


def unavailable_reason(root: HostRoot) -> str | None:
    if not root.live:
        return "capture: no live data"
    return None


class _Sampler:
    """inspector.live.LiveSampler plus memory, pressure and filesystem fill, each source under
    the sample's deadline (`read_timeout`). `sample()` returns the rates since the previous
    call (None on the first call: rates need two samples). Lives in LiveProcess's child."""

    def __init__(self, root: HostRoot, read_timeout: float = READ_TIMEOUT):
        import inspector.live as live
        self._live = live
        self.root = root
        self.read_timeout = read_timeout
        self._inner = live.LiveSampler(root, process_io=True, read_timeout=read_timeout)
        self._fs = FilesystemSampler(root)
        self._reads = Reads()
        self._fs_read: Any = None
        self._fs_last: Any = None
        self._fs_at = float("-inf")
        self._prev: Snapshot | None = None

    def sample(self) -> LiveView | None:
        root = self.root
        now = time.monotonic()
        deadline = now + self.read_timeout
        extras = self._reads.start_all({"memory": lambda: read_memory(root),
                                        "pressure": lambda: read_pressure(root)})
        if now - self._fs_at >= FILESYSTEMS_EVERY:
            # a thread of its own, never waited for: the sweep bounds each statvfs itself
            # (one still out from the last sweep is not started again)
            self._fs_read, self._fs_at = self._reads.start("filesystems", self._fs.sample), now
        cur = self._inner.sample()
        self._reads.settle(extras, deadline)
        timed_out = dict(cur.timed_out)
        got = {}
        for name, read in extras.items():
            got[name] = read.result(deadline)
            if read.timed_out:
                timed_out[EXTRA_SOURCES[name]] = read.timed_out
                got[name] = Unknown(f"{EXTRA_SOURCES[name]} {read.timed_out}")
        if self._fs_read is not None and self._fs_read.call.done.is_set():
            self._fs_last = self._fs_read.peek()
        prev, self._prev = self._prev, cur
        if prev is None:
            return None
        view = normalise(self._live.rates(prev, cur))
        if view is None:
            return None
        view.memory = got["memory"]
        view.pressure = got["pressure"]
        view.filesystems = self._fs_last
        view.root_device = root_device(self._fs_last, cur.disks)
        view.timed_out = timed_out
        return view


class LiveProcess:
    """_Sampler in a child process for the session: `sample()` is its view (None on the first
    call), or raises inspector.bounded.TimedOut / WorkerFailed when the child does not answer
    within the sampler's deadline and a grace (a new child then takes over, priming again)."""
    bounded = True      # the app calls sample() as it is: no thread of its own around it

    def __init__(self, root: HostRoot, read_timeout: float = READ_TIMEOUT):
        self.timeout = read_timeout + ANSWER_GRACE

        def make_serve():
            sampler = _Sampler(root, read_timeout)
            return lambda _request: sampler.sample()
        self._service = ForkedService(make_serve)

    def sample(self) -> LiveView | None:
        return self._service.call("sample", self.timeout)

    def close(self) -> None:
        self._service.close()


def root_device(filesystems: Any, disks: Any) -> str | None:
    """Name of the block device "/" is mounted from, by its major:minor in /proc/diskstats."""
    if not isinstance(filesystems, list) or not isinstance(disks, dict):
        return None
    majmin = next((fs.majmin for fs in filesystems if fs.mountpoint == "/"), None)
    if majmin is None:
        return None
    return next((name for name, c in disks.items() if f"{c.major}:{c.minor}" == majmin), None)


def make_sampler(root: HostRoot) -> Any:
    if unavailable_reason(root) is not None:
        return None
    try:
        return LiveProcess(root)
    except Exception:
        return None


def _num(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def normalise(raw: Any) -> LiveView | None:
    """inspector.live.Rates to a LiveView."""
    if raw is None or isinstance(raw, LiveView):
        return raw
    view = LiveView(interval=float(getattr(raw, "interval", 0.0) or 0.0),
                    findings=list(getattr(raw, "findings", []) or []))
    disks = getattr(raw, "disks", None)
    if isinstance(disks, list):
        for d in disks:
            r_s, w_s = _num(d.r_s) or 0.0, _num(d.w_s) or 0.0
            ops = r_s + w_s
            await_ms = ((r_s * (_num(d.r_await) or 0.0) + w_s * (_num(d.w_await) or 0.0)) / ops
                        if ops > 0 else 0.0)
            view.disks.append(DiskRate(d.name, _num(d.util), await_ms, r_s, w_s, _num(d.rkB_s),
                                       _num(d.wkB_s), _num(d.aqu_sz), kind=d.kind,
                                       parent=d.parent, members=list(d.members),
                                       busy_members=list(d.busy_members), alias=d.alias))
    else:
        view.disks_error = str(disks)
        view.notes.append(f"disks: {disks}")
    stalled = {f.subject for f in view.findings if getattr(f, "code", "") == "net.stall"}
    nics = getattr(raw, "nics", None)
    if isinstance(nics, list):
        for n in nics:
            errors = sum(v for v in (_num(n.rx_errors_s), _num(n.tx_errors_s)) if v is not None)
            drops = sum(v for v in (_num(n.rx_dropped_s), _num(n.tx_dropped_s)) if v is not None)
            view.nics.append(NicRate(n.name, _num(n.rx_bytes_s), _num(n.tx_bytes_s), errors,
                                     drops, n.name in stalled,
                                     n.operstate if isinstance(n.operstate, str) else None,
                                     n.carrier if isinstance(n.carrier, bool) else None))
    else:
        view.nics_error = str(nics)
    cpu = getattr(raw, "cpu", None)
    overall = getattr(cpu, "overall", None)
    if overall is not None:
        view.iowait, view.steal = _num(overall.iowait), _num(overall.steal)
        view.busy = 100.0 - (_num(overall.idle) or 0.0) - (view.iowait or 0.0)
        view.cpu = CpuView(user=overall.user + overall.nice,
                           system=overall.system + overall.irq + overall.softirq,
                           iowait=overall.iowait, steal=overall.steal, idle=overall.idle,
                           cpus=len(getattr(cpu, "per_cpu", []) or []))
    elif cpu is not None:
        view.cpu = cpu if isinstance(cpu, Unknown) else Unknown(str(cpu))
    view.load = getattr(raw, "load", None)
    view.top_io = getattr(raw, "top_io", None)
    view.dstate = getattr(raw, "dstate", None)
    return view
