"""Live disk rules: a saturated device with the processes doing its IO, await far above the
device's own recent baseline, one md/dm member much slower than its siblings, and md
resync/recovery/reshape starting, stalling or ending while we watch (speed and ETA)."""
from __future__ import annotations

import statistics

from inspector.config import LiveThresholds
from inspector.health.live.common import bytes_s, duration, who
from inspector.health.live.window import Context, Window
from inspector.live.diskstats import DiskRates
from inspector.model import Finding, Level

_MD_STATE = "md_state"


def _await(d: DiskRates) -> float | None:
    ops = d.r_s + d.w_s
    if ops <= 0:
        return None
    return (d.r_s * d.r_await + d.w_s * d.w_await) / ops


def _by_name(window: Window) -> dict[str, list[tuple[float, DiskRates]]]:
    out: dict[str, list[tuple[float, DiskRates]]] = {}
    for s in window.samples:
        if isinstance(s.disks, list):
            for d in s.disks:
                out.setdefault(d.name, []).append((s.interval, d))
    return out


def rules(window: Window, t: LiveThresholds, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    last = window.last
    disks = last.disks if isinstance(last.disks, list) else []
    by_name = _by_name(window)
    for d in disks:                      # the await baselines grow every sample
        value = _await(d)
        if value is not None:
            window.series_of("await", d.name, t.disk.baseline_s).add(last.wall, value)
    window.forget_series("await", (d.name for d in disks))
    if window.full():
        out += _saturated(window, t, by_name)
        out += _await_regressions(window, t, by_name)
        out += _slow_members(window, t, by_name)
    out += _md_sync(window, t)
    return out


def _saturated(window: Window, t: LiveThresholds,
               by_name: dict[str, list[tuple[float, DiskRates]]]) -> list[Finding]:
    out = []
    span = window.covered()
    for name, seen in by_name.items():
        d = seen[-1][1]
        if d.kind == "part" or len(seen) < 2:
            continue
        util = sum(i * x.util for i, x in seen) / max(sum(i for i, _ in seen), 1e-9)
        if util < t.disk.util_pct:
            window.series.pop(("saturated", name), None)
            continue
        aqu = sum(i * x.aqu_sz for i, x in seen) / max(sum(i for i, _ in seen), 1e-9)
        awaits = [a for _, x in seen if (a := _await(x)) is not None]
        series = window.series_of("saturated", name, t.disk.crit_after_s * 4)
        series.add(window.wall, util)
        lasting = window.wall - series.points[0][0] + span    # saturated this long
        doers = _io_doers(window, name)
        figures = [f"{util:.0f}% util", f"aqu-sz {aqu:.1f}"]
        if awaits:
            figures.append(f"await {statistics.fmean(awaits):.0f} ms")
        out.append(Finding(
            Level.CRIT if lasting >= t.disk.crit_after_s else Level.WARN, name,
            f"{name} saturated ({', '.join(figures)} over {span:.0f} s)"
            + (f"; IO from {', '.join(doers)}" if doers else ""),
            evidence=figures + [f"doing IO: {x}" for x in doers]
            + ([f"members: {', '.join(d.members)}"] if d.members else []),
            advice="Requests queue on this device: move IO off it, look at the processes "
                   "doing it, or at the device under it (a member, the host's storage).",
            code="live.disk.saturated"))
    for name in [k[1] for k in window.series if k[0] == "saturated" and k[1] not in by_name]:
        del window.series[("saturated", name)]
    return out


def _io_doers(window: Window, disk: str) -> list[str]:
    """Processes in D on this device first, then the top IO processes of the window."""
    names: list[str] = []
    last = window.last
    if isinstance(last.dstate, list):
        for d in last.dstate:
            if d.device == disk:
                text = f"{d.comm} (pid {d.tgid}, in D {d.seconds:.0f} s)"
                if text not in names:
                    names.append(text)
    top = [pair for pair in window.process_means(lambda p: p.io_bytes_s)
           if all(f"pid {pair[1].pid}," not in n for n in names)]
    names += [f"{who(p)} {bytes_s(v)}" for v, p in top[:3]]
    return names[:4]


def _await_regressions(window: Window, t: LiveThresholds,
                       by_name: dict[str, list[tuple[float, DiskRates]]]) -> list[Finding]:
    out = []
    start = window.samples[0].wall
    for name, seen in by_name.items():
        recent = [a for _, d in seen if (a := _await(d)) is not None]
        if len(recent) < 2:
            continue
        history = window.series_of("await", name, t.disk.baseline_s).before(start)
        if len(history) < 5:
            continue
        baseline = statistics.median(history)
        now = statistics.median(recent)
        if now < t.disk.await_min_ms or now < t.disk.await_ratio * max(baseline, 0.05):
            continue
        out.append(Finding(
            Level.WARN, name,
            f"{name} await {now:.1f} ms, {now / max(baseline, 0.05):.0f}x its baseline of "
            f"{baseline:.2f} ms",
            evidence=[f"median await now {now:.1f} ms over {window.covered():.0f} s",
                      f"baseline: median of {len(history)} samples before, {baseline:.2f} ms"],
            advice="The device answers much slower than it did minutes ago: look at what "
                   "changed under it (the array, the host's storage, a failing drive).",
            code="live.disk.await_regression"))
    return out


def _slow_members(window: Window, t: LiveThresholds,
                  by_name: dict[str, list[tuple[float, DiskRates]]]) -> list[Finding]:
    out = []
    for name, seen in by_name.items():
        array = seen[-1][1]
        if len(array.members) < 2:
            continue
        awaits: dict[str, float] = {}
        for member in array.members:
            values = [a for _, d in by_name.get(member, []) if (a := _await(d)) is not None]
            if values:
                awaits[member] = statistics.fmean(values)
        if len(awaits) < 2:
            continue
        for member, value in awaits.items():
            others = [v for m, v in awaits.items() if m != member]
            median = statistics.median(others)
            if value >= t.disk.await_min_ms and value >= t.disk.member_ratio * max(median, 0.05):
                out.append(Finding(
                    Level.WARN, member,
                    f"{member} of {name} is slow: await {value:.1f} ms against "
                    f"{median:.1f} ms on its siblings",
                    evidence=[f"{m}: await {v:.1f} ms" for m, v in sorted(awaits.items())],
                    advice=f"One slow member holds up every stripe of {name}: check its "
                           "health (SMART, cabling, the kernel log) and consider failing it.",
                    code="live.md.slow_member"))
    return out


def _md_sync(window: Window, t: LiveThresholds) -> list[Finding]:
    """Resync/recovery/reshape/check: running (with speed, progress, ETA), stalled, ended."""
    last = window.last
    if not isinstance(last.md, list):
        return []
    out = []
    for md in last.md:
        done_series = window.series_of(_MD_STATE, md.name, 3600.0)
        if md.running and md.done_sectors is not None:
            done_series.add(last.wall, float(md.done_sectors))
            points = list(done_series.points)
            moved = [p for p in points if p[1] != points[-1][1]]
            since_move = last.wall - (moved[-1][0] if moved else points[0][0])
            fraction = md.fraction or 0.0
            eta = md.eta_s()
            speed = md.speed_kib_s
            if speed is None and len(points) >= 2 and points[-1][0] > points[0][0]:
                speed = (points[-1][1] - points[0][1]) / 2 / (points[-1][0] - points[0][0])
                eta = md.eta_s(speed)
            stalled = since_move >= t.disk.md_stall_s and len(points) >= 2
            text = (f"{md.action} of {md.name} at {fraction * 100:.1f}%"
                    + (f", {speed / 1024:.1f} MiB/s" if speed else "")
                    + (f", done in {duration(eta)}" if eta and not stalled else ""))
            if stalled:
                text = f"{md.action} of {md.name} stalled at {fraction * 100:.1f}%: no " \
                       f"progress for {since_move:.0f} s"
            out.append(Finding(
                Level.CRIT if stalled or (md.degraded or 0) > 0 and stalled else Level.WARN,
                md.name, text,
                evidence=[f"sync_action {md.action}",
                          f"{md.done_sectors} of {md.total_sectors} sectors"]
                + ([f"degraded members: {md.degraded}"] if md.degraded else []),
                advice="The array is rebuilding or checking: its members are busy and its "
                       "redundancy may be reduced until it ends. `echo idle > "
                       f"/sys/block/{md.name}/md/sync_action` stops a check.",
                code="live.md.resync"))
        elif done_series.points:
            done_series.points.clear()      # it ended: the finding ends with this sample
    return out
