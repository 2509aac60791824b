"""Live CPU rules: saturation naming the top CPU processes, steal naming the hypervisor
layer discovery found, iowait naming the disk behind it."""
from __future__ import annotations

from inspector.config import LiveThresholds
from inspector.health.live.common import culprits
from inspector.health.live.window import Context, Window, stall_share
from inspector.live.sampler import Rates
from inspector.model import Finding, Level


def cpus_of(window: Window, ctx: Context) -> int:
    if ctx.cpus:
        return ctx.cpus
    cpu = window.last.cpu
    per = getattr(cpu, "per_cpu", None)
    return len(per) if per else 1


def _overall(s: Rates, name: str) -> float | None:
    overall = getattr(s.cpu, "overall", None)
    return getattr(overall, name, None) if overall is not None else None


def _busy(s: Rates) -> float | None:
    idle, iowait, steal = (_overall(s, n) for n in ("idle", "iowait", "steal"))
    if idle is None:
        return None
    return 100.0 - idle - (iowait or 0.0) - (steal or 0.0)


def _runnable(s: Rates) -> float | None:
    running = getattr(s.cpu, "procs_running", None)
    # /proc/stat counts the sampler itself, running as it reads the file
    return max(running - 1, 0) if isinstance(running, int) else None


def _psi(s: Rates, resource: str, line: str = "some") -> float | None:
    pressure = s.pressure
    if not isinstance(pressure, dict):
        return None
    p = pressure.get(resource)
    return getattr(p, f"{line}_avg10", None)


def rules(window: Window, t: LiveThresholds, ctx: Context) -> list[Finding]:
    if not window.full():
        return []
    out: list[Finding] = []
    c = t.cpu
    n = cpus_of(window, ctx)
    busy = window.mean(_busy)
    runnable = window.mean(_runnable)
    psi = max((v for v in (_psi(window.last, "cpu"), stall_share(window, "cpu"))
               if v is not None), default=None)
    if busy is not None and busy >= c.busy_pct and (
            (runnable is not None and runnable > n * c.runnable_per_cpu)
            or (psi is not None and psi >= c.psi_some_pct)):
        top = window.process_means(lambda p: p.cpu_pct)
        crit = runnable is not None and runnable >= n * c.crit_runnable_per_cpu
        figures = [f"{busy:.0f}% busy over {window.covered():.0f} s"]
        if runnable is not None:
            figures.append(f"{runnable:.1f} runnable tasks on {n} CPU{'s' * (n != 1)}")
        if psi is not None:
            figures.append(f"PSI cpu some {psi:.0f}%")
        names = culprits(top, "%")
        out.append(Finding(
            Level.CRIT if crit else Level.WARN, "cpu",
            f"CPU saturated ({', '.join(figures)}); top: "
            + (", ".join(names) if names else "no process stands out"),
            evidence=figures + [f"top CPU: {x}" for x in names],
            advice="Tasks wait for a CPU: look at the top processes (renice, limit or move "
                   "them), or add CPUs.", code="live.cpu.saturated"))
    steal = window.mean(lambda s: _overall(s, "steal"))
    if steal is not None and steal >= c.steal_pct:
        layer = ctx.hypervisor or "the hypervisor (layer not known to this view)"
        out.append(Finding(
            Level.CRIT if steal >= c.crit_steal_pct else Level.WARN, "cpu",
            f"{steal:.0f}% of CPU time stolen by {layer} over {window.covered():.0f} s",
            evidence=[f"steal {steal:.1f}% (threshold {c.steal_pct:g}%)",
                      f"virtualization: {layer}"],
            advice="Other guests on the same host get this CPU time (a noisy neighbour or an "
                   "overcommitted host): ask the provider, or move the guest.",
            code="live.cpu.steal"))
    iowait = window.mean(lambda s: _overall(s, "iowait"))
    if iowait is not None and iowait >= c.iowait_pct:
        disk = _disk_behind(window)
        out.append(Finding(
            Level.WARN, "cpu",
            f"{iowait:.0f}% of CPU time waiting for IO over {window.covered():.0f} s"
            + (f", behind it {disk}" if disk else ""),
            evidence=[f"iowait {iowait:.1f}% (threshold {c.iowait_pct:g}%)"]
            + ([f"disk: {disk}"] if disk else []),
            advice="Tasks wait on a disk: look at its %util and await, and at who does IO.",
            code="live.cpu.iowait"))
    return out


def _disk_behind(window: Window) -> str | None:
    """The device the D-state tasks wait on, else the busiest leaf disk of the window."""
    last = window.last
    if isinstance(last.dstate, list):
        devices = [d.device for d in last.dstate if d.device]
        if devices:
            name = max(set(devices), key=devices.count)
            return f"{name} ({devices.count(name)} task{'s' * (devices.count(name) != 1)} "\
                   "in D on it)"
    utils: dict[str, float] = {}
    for s in window.samples:
        if isinstance(s.disks, list):
            for d in s.disks:
                if d.kind != "part" and not d.members:
                    utils[d.name] = utils.get(d.name, 0.0) + d.util * s.interval
    if not utils:
        return None
    name = max(utils, key=lambda k: utils[k])
    util = utils[name] / max(window.covered(), 1e-9)
    return f"{name} ({util:.0f}% util)" if util >= 10 else None
