"""/proc/stat and /proc/loadavg: CPU time split per interval, overall and per CPU.

Jiffy columns: user nice system idle iowait irq softirq steal guest guest_nice. guest and
guest_nice are already inside user and nice (the kernel adds them to both), so the total is the
first eight. Steal is time the hypervisor gave this vCPU to someone else.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(slots=True)
class CpuCounters:
    """Cumulative counters from one read of /proc/stat."""
    total: tuple[int, ...]                    # the eight STATES columns, all CPUs
    per_cpu: dict[str, tuple[int, ...]]       # "cpu0" -> eight columns
    ctxt: int | None = None
    intr: int | None = None
    procs_running: int | None = None
    procs_blocked: int | None = None


@dataclass(slots=True)
class LoadAvg:
    load1: float
    load5: float
    load15: float
    runnable: int
    threads: int


@dataclass(slots=True)
class CpuPercent:
    """Share of the interval in each state, percent (sums to about 100)."""
    cpu: str
    user: float
    nice: float
    system: float
    idle: float
    iowait: float
    irq: float
    softirq: float
    steal: float


@dataclass
class CpuRates:
    overall: CpuPercent
    per_cpu: list[CpuPercent] = field(default_factory=list)
    ctxt_s: float | Unknown = Unknown("not in /proc/stat")
    intr_s: float | Unknown = Unknown("not in /proc/stat")
    procs_running: int | Unknown = Unknown("not in /proc/stat")
    procs_blocked: int | Unknown = Unknown("not in /proc/stat")


class CpuStatParseError(ValueError):
    pass


def _jiffies(fields: list[str], lineno: int) -> tuple[int, ...]:
    try:
        values = [int(v) for v in fields[1:9]]
    except ValueError:
        raise CpuStatParseError(f"/proc/stat line {lineno}: non-numeric CPU time") from None
    if len(values) < 4:
        raise CpuStatParseError(f"/proc/stat line {lineno}: fewer than 4 CPU time columns")
    values += [0] * (8 - len(values))   # kernels before 2.6.11 lack iowait..steal
    return tuple(values)


def parse_stat(text: str) -> CpuCounters:
    total: tuple[int, ...] | None = None
    per_cpu: dict[str, tuple[int, ...]] = {}
    extra: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        key = fields[0]
        if key == "cpu":
            total = _jiffies(fields, lineno)
        elif key.startswith("cpu"):
            per_cpu[key] = _jiffies(fields, lineno)
        elif key in ("ctxt", "intr", "procs_running", "procs_blocked") and len(fields) > 1:
            try:
                extra[key] = int(fields[1])
            except ValueError:
                pass
    if total is None:
        raise CpuStatParseError("/proc/stat has no 'cpu' line")
    return CpuCounters(total, per_cpu, extra.get("ctxt"), extra.get("intr"),
                       extra.get("procs_running"), extra.get("procs_blocked"))


def read_cpu(root: HostRoot) -> CpuCounters | Unknown:
    try:
        return parse_stat(root.read_text("proc/stat", 1 << 20))
    except Unavailable as exc:
        return exc.unknown()
    except CpuStatParseError as exc:
        return Unknown(str(exc))


def read_loadavg(root: HostRoot) -> LoadAvg | Unknown:
    try:
        fields = root.read_line("proc/loadavg").split()
    except Unavailable as exc:
        return exc.unknown()
    try:
        runnable, threads = fields[3].split("/")
        return LoadAvg(float(fields[0]), float(fields[1]), float(fields[2]),
                       int(runnable), int(threads))
    except (IndexError, ValueError):
        return Unknown(f"unparsable /proc/loadavg {' '.join(fields)[:60]!r}")


def percent(name: str, prev: tuple[int, ...], cur: tuple[int, ...]) -> CpuPercent:
    # idle and iowait can step backwards on some kernels (NO_HZ accounting): clamp at 0
    deltas = [max(c - p, 0) for p, c in zip(prev, cur)]
    span = sum(deltas)
    scale = 100.0 / span if span else 0.0
    return CpuPercent(name, *(d * scale for d in deltas))


def cpu_rates(prev: CpuCounters, cur: CpuCounters, interval: float) -> CpuRates:
    out = CpuRates(overall=percent("all", prev.total, cur.total))
    out.per_cpu = [percent(name, prev.per_cpu[name], values)
                   for name, values in cur.per_cpu.items() if name in prev.per_cpu]
    if interval > 0:
        if prev.ctxt is not None and cur.ctxt is not None:
            out.ctxt_s = max(cur.ctxt - prev.ctxt, 0) / interval
        if prev.intr is not None and cur.intr is not None:
            out.intr_s = max(cur.intr - prev.intr, 0) / interval
    if cur.procs_running is not None:
        out.procs_running = cur.procs_running
    if cur.procs_blocked is not None:
        out.procs_blocked = cur.procs_blocked
    return out
