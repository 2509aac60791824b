"""Live task rule: tasks in D state (uninterruptible, usually IO) for longer than a few
seconds, one finding per device (or per wait point when the device is not known), naming
the wait points, the tasks and the longest wait."""
from __future__ import annotations

from inspector.config import LiveThresholds
from inspector.health.live.window import Context, Window
from inspector.live.procs import DStateProc
from inspector.model import Finding, Level

SHOWN = 4


def rules(window: Window, t: LiveThresholds, ctx: Context) -> list[Finding]:
    dstate = window.last.dstate
    if not isinstance(dstate, list):
        return []
    stuck = [d for d in dstate if d.seconds >= t.tasks.dstate_s]
    groups: dict[str, list[DStateProc]] = {}
    for d in stuck:
        groups.setdefault(d.device or f"wait {d.wait or 'unknown'}", []).append(d)
    out = []
    for subject, tasks in sorted(groups.items()):
        tasks.sort(key=lambda d: (-d.seconds, d.pid))
        longest = tasks[0]
        waits: dict[str, int] = {}
        for d in tasks:
            waits[d.wait or "unknown"] = waits.get(d.wait or "unknown", 0) + 1
        where = ", ".join(f"{w} ({n})" for w, n in sorted(waits.items(), key=lambda x: -x[1]))
        names = [f"{d.comm} (pid {d.tgid}{'' if d.pid == d.tgid else f' thread {d.pid}'}, "
                 f"{d.seconds:.0f} s)" for d in tasks[:SHOWN]]
        more = f" and {len(tasks) - SHOWN} more" if len(tasks) > SHOWN else ""
        on = f" on {subject}" if not subject.startswith("wait ") else ""
        out.append(Finding(
            Level.CRIT if longest.seconds >= t.tasks.crit_dstate_s else Level.WARN, subject,
            f"{len(tasks)} task{'s' * (len(tasks) != 1)} in D state{on}, longest "
            f"{longest.seconds:.0f} s ({longest.comm}, pid {longest.tgid}), waiting in "
            f"{where}: {', '.join(names)}{more}",
            evidence=[f"wait points: {where}"] + [
                f"{d.comm} pid {d.tgid} tid {d.pid}: D for {d.seconds:.0f} s in "
                f"{d.wait or 'unknown'}" + (f" on {d.device}" if d.device else "")
                for d in tasks[:SHOWN * 2]],
            advice="Tasks stuck in uninterruptible sleep wait on IO or a kernel lock: look at "
                   "the device (%util, await), hung NFS/FUSE mounts, and the kernel log "
                   "('blocked for more than').", code="live.tasks.dstate"))
    return out
