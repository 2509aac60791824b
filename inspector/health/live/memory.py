"""Live memory rules: PSI memory some/full (MemAvailable where the kernel has no PSI), swap-in
and major-fault rates naming who faults, OOM kills naming the victim, dirty and writeback
growing without draining."""
from __future__ import annotations

from inspector.config import LiveThresholds
from inspector.health.live.common import culprits, mib
from inspector.health.live.window import Context, Window, stall_share
from inspector.live.sampler import Rates
from inspector.live.vmstat import VmRates
from inspector.model import Finding, Level


def _vm(s: Rates, name: str) -> float | None:
    return getattr(s.vm, name, None) if isinstance(s.vm, VmRates) else None


def rules(window: Window, t: LiveThresholds, ctx: Context) -> list[Finding]:
    m = t.memory
    out: list[Finding] = []
    last = window.last
    out += _oom(window)
    if not window.full():
        return out
    pressure = last.pressure
    mem = pressure.get("memory") if isinstance(pressure, dict) else None
    some = _worse(getattr(mem, "some_avg10", None), stall_share(window, "memory"))
    full = _worse(getattr(mem, "full_avg10", None), stall_share(window, "memory", "full"))
    if some is not None:
        if some >= m.psi_some_pct or (full is not None and full >= m.psi_full_pct):
            faulting, hogs = _stallers(window)
            crit = full is not None and full >= m.psi_full_pct
            out.append(Finding(
                Level.CRIT if crit else Level.WARN, "memory",
                f"memory pressure: PSI some {some:.0f}%"
                + (f", full {full:.0f}%" if full is not None else "")
                + (f"; {'faulting' if faulting else 'largest'}: {', '.join(hogs)}"
                   if hogs else ""),
                evidence=[f"/proc/pressure/memory some {some:.1f}%"
                          + (f", full {full:.1f}%" if full is not None else "")
                          + f" (the larger of avg10 and the share over {window.covered():.0f} s)"]
                + [f"largest: {h}" for h in hogs],
                advice="Tasks stall reclaiming memory: find what grew (largest RSS), add "
                       "memory or limit it.", code="live.mem.pressure"))
    elif last.memory is not None and not isinstance(pressure, dict):
        total = getattr(last.memory, "total_kib", 0)
        avail = getattr(last.memory, "available_kib", None)
        if total and avail is not None and 100.0 * avail / total < m.available_pct:
            hogs = _stallers(window)[1]
            out.append(Finding(
                Level.WARN, "memory",
                f"memory nearly exhausted: {mib(avail)} available of {mib(total)} (no PSI "
                f"in this kernel: judged from MemAvailable)",
                evidence=[f"MemAvailable {avail} KiB of {total} KiB",
                          f"PSI: {pressure}"] + [f"largest: {h}" for h in hogs],
                advice="Find what grew (largest RSS), add memory or limit it.",
                code="live.mem.pressure"))
    swapin = window.mean(lambda s: _vm(s, "pswpin_s"))
    if swapin is not None and swapin >= m.swapin_pages_s:
        swapped = culprits(window.process_means(lambda p: float(p.swap_kib or 0)), " KiB swapped")
        out.append(Finding(
            Level.WARN, "memory",
            f"swapping in {swapin:.0f} pages/s" + (f"; most swapped: {', '.join(swapped)}"
                                                    if swapped else ""),
            evidence=[f"pswpin {swapin:.0f}/s over {window.covered():.0f} s"] + swapped,
            advice="Memory the processes need comes back from swap: they run at disk speed.",
            code="live.mem.swapin"))
    faults = window.mean(lambda s: _vm(s, "pgmajfault_s"))
    if faults is not None and faults >= m.majfault_s:
        who = culprits(window.process_means(lambda p: p.majflt_s), "/s")
        out.append(Finding(
            Level.WARN, "memory",
            f"{faults:.0f} major page faults/s" + (f"; from {', '.join(who)}" if who else ""),
            evidence=[f"pgmajfault {faults:.0f}/s over {window.covered():.0f} s"] + who,
            advice="Pages are read back from disk as they are touched: the page cache or "
                   "memory is too small for the working set.", code="live.mem.majfault"))
    out += _dirty(window, t)
    return out


def _stallers(window: Window) -> tuple[bool, list[str]]:
    """Who stalls: the processes taking major faults (True), else the largest (False)."""
    faulting = window.process_means(lambda p: p.majflt_s)
    if faulting:
        return True, culprits(faulting, " major faults/s")
    return False, culprits(window.process_means(lambda p: float(p.mem_kib)), " KiB",
                           fmt="{:.0f}")


def _worse(a: float | None, b: float | None) -> float | None:
    values = [v for v in (a, b) if v is not None]
    return max(values) if values else None


def _oom(window: Window) -> list[Finding]:
    """One finding per kill seen this session, raised while the kill is in the window."""
    out = []
    for s in window.samples:
        kills = _vm(s, "oom_kills")
        if not kills:
            continue
        victims = s.oom_victims if isinstance(s.oom_victims, list) else []
        named = ", ".join(f"{v.comm} (pid {v.pid}"
                          + (f", {mib(v.rss_kib)} resident" if v.rss_kib else "")
                          + (", cgroup limit" if v.cgroup else "") + ")" for v in victims)
        why = "" if victims else (
            f" (victim not named: {s.oom_victims.reason})" if s.oom_victims is not None
            and not isinstance(s.oom_victims, list) else " (the kernel log did not name it)")
        out.append(Finding(
            Level.CRIT, "memory",
            f"OOM killer killed {int(kills)} process{'es' * (int(kills) != 1)}"
            + (f": {named}" if named else why),
            evidence=[f"/proc/vmstat oom_kill +{int(kills)}"] + [
                f"kernel log: killed {v.comm} pid {v.pid}" for v in victims],
            advice="Memory ran out (or a cgroup's limit): the kernel log has the whole "
                   "report; find what grew.", code="live.mem.oom_kill"))
    return out[-1:]


def _dirty(window: Window, t: LiveThresholds) -> list[Finding]:
    series = window.series_of("dirty", "memory", 120.0)
    last = window.last
    dirty, wb = _vm(last, "dirty_kib"), _vm(last, "writeback_kib")
    if dirty is None:
        return []
    total = dirty + (wb or 0)
    series.add(last.wall, total)
    points = list(series.points)
    if len(points) < 6 or total < t.memory.dirty_min_mib * 1024:
        return []
    # growing without draining: every step over the last minute up or flat, and up overall
    recent = [v for w, v in points if last.wall - w <= 60.0]
    rising = all(b >= a * 0.98 for a, b in zip(recent, recent[1:]))
    if not rising or recent[-1] <= recent[0] * 1.2:
        return []
    return [Finding(
        Level.WARN, "memory",
        f"dirty + writeback {mib(total)} and growing ({mib(recent[0])} "
        f"{last.wall - points[-len(recent)][0]:.0f} s ago) without draining",
        evidence=[f"Dirty {dirty:.0f} KiB, Writeback {wb or 0:.0f} KiB"],
        advice="Writes come in faster than the disks take them: a sync or the next "
               "writeback will stall writers; look at the disks' %util and await.",
        code="live.mem.dirty_growing")]
