"""Adapter from the live sampler (inspector.live) to what the screens show.

The screens need normalised figures per sample (iostat -x per disk with its place in the md/dm
stack, NIC rates with link state, the CPU split, load, pressure, memory, filesystem fill,
processes and D-state tasks) and the live findings; this module is the only place that knows
the sampler's API. `make_sampler(root)` returns None on a capture (no live data);
`unavailable_reason(root)` says why in plain words. Every part of a LiveView that could not be
read is Unknown(reason), which the panels show as it is ("statvfs timed out after 1 s", "no
PSI in this kernel").

The sampler is the one `inspector top` uses (inspector.live.worker.SamplerProcess): every
source read under a deadline in a child process for the session, so a read stuck in the
kernel leaves a thread there, never in the TUI, which can then always exit. The live rules
(inspector.health.live) run here on each sample.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inspector.config import ConfigError, LiveThresholds, load_config
from inspector.health.live.session import LiveSession
from inspector.live.cpustat import CpuRates
from inspector.live.findings import LiveFinding
from inspector.live.processes import ProcessRate
from inspector.live.sampler import READ_TIMEOUT, Counters, Rates
from inspector.live.worker import SamplerProcess
from inspector.model import Finding, Level, Unknown
from inspector.roots.bounded import Worker
from inspector.roots.host import HostRoot


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
    # findings to list with discovery's: the sampler's (NIC stall, D state), the live rules'
    # active ones (their `since` in the evidence) and, as OK, those that ended this session
    findings: list[Finding] = field(default_factory=list)
    cpu: CpuView | Unknown | None = None
    # Any until the panels narrow them (tui/dashboard.py reads them by duck typing):
    load: Any = None                 # LoadAvg | Unknown | None
    pressure: Any = None             # {resource: Pressure | Unknown} | Unknown | None
    memory: Any = None               # MemoryUse | Unknown | None
    filesystems: Any = None          # list[FsUse] | Unknown | None
    top_io: Any = None               # list[ProcIoRate] | Unknown | None
    dstate: Any = None               # list[DStateProc] | Unknown | None
    # every process, sorted by CPU (inspector.live.processes.sort_processes re-sorts)
    processes: list[ProcessRate] | Unknown | None = None
    # the live rules' findings, active first then ended, with since/ended times
    live_findings: list[LiveFinding] = field(default_factory=list)
    sample: Rates | None = None      # the typed sample this view was made from
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


class LiveFeed:
    """Live samples and findings from any reader of counters: `sample()` is a LiveView (None
    on the first call: rates need two samples). LiveProcess reads a child process; tests and
    tools may pass LiveSampler(root).sample to read in-process."""

    def __init__(self, read: Callable[[], Counters],
                 thresholds: LiveThresholds | None = None):
        self.session = LiveSession(read, thresholds)
        self.problems: list[Finding] = []     # listed with the findings (a bad config file)

    def sample(self) -> LiveView | None:
        step = self.session.step()
        if step.sample is None:
            return None
        view = normalise(step.sample)
        if view is not None:
            view.live_findings = step.findings
            view.findings = (view.findings + self.problems
                             + [lf.as_finding() for lf in step.findings])
        return view

    def set_hypervisor(self, layer: str | None) -> None:
        """The virtualization layer discovery found, for the steal finding to name."""
        self.session.set_hypervisor(layer)


class LiveProcess(LiveFeed):
    """The session's live sampler in a child process (inspector.live.worker.SamplerProcess)
    and the live rules. `sample()` raises inspector.roots.bounded.TimedOut / WorkerFailed when the
    child does not answer within the sampler's deadline and a grace (a new child then takes
    over, priming again)."""
    bounded = True      # the app calls sample() as it is: no thread of its own around it

    def __init__(self, root: HostRoot, read_timeout: float = READ_TIMEOUT,
                 thresholds: LiveThresholds | None = None, worker: Worker | None = None):
        """`worker`: a child already serving inspector.live.worker.sampler_service(root,
        read_timeout=read_timeout) (inspector.tui.readers); by default one is forked."""
        self._sampler = SamplerProcess(root, worker, read_timeout=read_timeout)
        super().__init__(self._sampler.counters, thresholds)

    def close(self) -> None:
        self._sampler.close()


def make_sampler(root: HostRoot, worker: Worker | None = None) -> LiveProcess | None:
    """The live sampler with the thresholds of the configuration file; a file that cannot be
    used leaves the defaults and is listed as an UNKNOWN finding `config.invalid`.
    `worker`: as LiveProcess's (closed here when there is nothing live to sample)."""
    if unavailable_reason(root) is not None:
        if worker is not None:
            worker.close()
        return None
    try:
        thresholds, problem = LiveThresholds(), None
        try:
            thresholds = load_config().live
        except ConfigError as exc:
            problem = Finding(Level.UNKNOWN, "config", str(exc), code="config.invalid",
                              advice="Fix the key or value; the live rules use their "
                                     "defaults meanwhile.")
        sampler = LiveProcess(root, thresholds=thresholds, worker=worker)
        sampler.problems = [problem] if problem else []
        return sampler
    except Exception:
        if worker is not None:
            worker.close()
        return None


def _num(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def normalise(raw: Rates | LiveView | None) -> LiveView | None:
    """The live sample (inspector.live.Rates, live or read back from a recording) to a
    LiveView."""
    if raw is None or isinstance(raw, LiveView):
        return raw
    view = LiveView(interval=float(raw.interval or 0.0), findings=list(raw.findings),
                    sample=raw)
    if isinstance(raw.disks, list):
        for d in raw.disks:
            r_s, w_s = _num(d.r_s) or 0.0, _num(d.w_s) or 0.0
            ops = r_s + w_s
            await_ms = ((r_s * (_num(d.r_await) or 0.0) + w_s * (_num(d.w_await) or 0.0)) / ops
                        if ops > 0 else 0.0)
            view.disks.append(DiskRate(d.name, _num(d.util), await_ms, r_s, w_s, _num(d.rkB_s),
                                       _num(d.wkB_s), _num(d.aqu_sz), kind=d.kind,
                                       parent=d.parent, members=list(d.members),
                                       busy_members=list(d.busy_members), alias=d.alias))
    else:
        view.disks_error = str(raw.disks)
        view.notes.append(f"disks: {raw.disks}")
    stalled = {f.subject for f in view.findings if f.code == "net.stall"}
    if isinstance(raw.nics, list):
        for n in raw.nics:
            errors = sum(v for v in (_num(n.rx_errors_s), _num(n.tx_errors_s)) if v is not None)
            drops = sum(v for v in (_num(n.rx_dropped_s), _num(n.tx_dropped_s)) if v is not None)
            view.nics.append(NicRate(n.name, _num(n.rx_bytes_s), _num(n.tx_bytes_s), errors,
                                     drops, n.name in stalled,
                                     n.operstate if isinstance(n.operstate, str) else None,
                                     n.carrier if isinstance(n.carrier, bool) else None))
    else:
        view.nics_error = str(raw.nics)
    cpu = raw.cpu
    if isinstance(cpu, CpuRates):
        overall = cpu.overall
        view.iowait, view.steal = _num(overall.iowait), _num(overall.steal)
        view.busy = 100.0 - (_num(overall.idle) or 0.0) - (view.iowait or 0.0)
        view.cpu = CpuView(user=overall.user + overall.nice,
                           system=overall.system + overall.irq + overall.softirq,
                           iowait=overall.iowait, steal=overall.steal, idle=overall.idle,
                           cpus=len(cpu.per_cpu))
    else:
        view.cpu = cpu
    view.load = raw.load
    view.top_io = raw.top_io
    view.dstate = raw.dstate
    view.memory = raw.memory
    view.pressure = raw.pressure
    view.filesystems = raw.filesystems
    view.processes = raw.processes
    view.timed_out = dict(raw.timed_out)
    view.root_device = raw.fs_devices.get("/")
    return view
