"""Health of md arrays known from /proc/mdstat alone (MdArray.source "mdstat": a sosreport, a
pasted mdstat, a capture without md sysfs). health.storage calls `mdstat_findings` for them.

What mdstat shows is reduced to the facts health.md_verdicts judges for sysfs arrays too, so a
host and its sosreport get the same verdicts (the table is there). Only mdstat gives
md.mdstat_incomplete: its lines do not say whether the array is degraded.
"""
from __future__ import annotations

from inspector.discover.md import MdArray, MdstatArray, is_container, missing_slots
from inspector.health import md_verdicts
from inspector.health.md_verdicts import MdFacts, Redundancy, SyncState
from inspector.model import Finding, known


def mdstat_redundancy(level: str, entry: MdstatArray) -> Redundancy | None:
    """How many failures the array takes, from its [N/M] and [U_] slots; None when mdstat
    does not show enough."""
    return md_verdicts.redundancy(level, entry.raid_disks, missing_slots(entry),
                                  _in_sync(entry), _copies(entry))


def _in_sync(entry: MdstatArray) -> list[bool] | None:
    if entry.status is None or entry.raid_disks is None or len(entry.status) != entry.raid_disks:
        return None
    return [c == "U" for c in entry.status]


def _copies(entry: MdstatArray) -> tuple[int, int]:
    # mdstat prints "N near-copies" / "N far-copies" only when N > 1
    return entry.near_copies or 1, entry.far_copies or 1


def mdstat_findings(array: MdArray) -> list[Finding]:
    entry = array.mdstat
    if entry is None:
        return []
    return md_verdicts.judge(mdstat_facts(array, entry))


def mdstat_facts(array: MdArray, entry: MdstatArray) -> MdFacts:
    name = array.name
    level = array.level if known(array.level) and array.level else "md"
    lines = [f"/proc/mdstat: {line}" for line in entry.lines]
    evidence = lines + [f"/sys/block/{name}/md: not in this root; judged from /proc/mdstat alone"]
    missing = missing_slots(entry)
    progress = entry.progress
    sync = None
    if progress is not None:
        sync = SyncState(progress.action, progress.state, array.progress_percent,
                         array.speed_kib_s if isinstance(array.speed_kib_s, int) else None,
                         array.eta_minutes)
    why = None
    if missing is None:
        why = ("/proc/mdstat does not show its raid level" if not known(array.level) else
               "/proc/mdstat does not show its [n/m] member count" if entry.raid_disks is None else
               f"its [{entry.raid_disks}/{entry.active_disks}] [{entry.status or ''}] do not add up")
    return MdFacts(
        name=name, level=level, running=entry.active, container=is_container(entry),
        volume_of=md_verdicts.container_of(entry.metadata), broken=entry.broken,
        raid_disks=entry.raid_disks, missing=missing, in_sync=_in_sync(entry), copies=_copies(entry),
        faulty=[m.name for m in entry.members if "faulty" in m.flags],
        spares=[m.name for m in entry.members if "spare" in m.flags],
        sync=sync, read_only=entry.read_only, unknown_why=why,
        evidence={"state": evidence, "sync": [e for e in lines if "=" in e] or evidence})
