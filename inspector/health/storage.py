"""Health rules for the storage section: md arrays, dm devices, block devices.

Codes (stable): md.degraded, md.failed, md.inactive, md.sync_running, md.sync_waiting,
md.member_faulty, md.read_only (levels: health.md_verdicts, one table for sysfs arrays and those
known from /proc/mdstat alone), md.mismatch and md.mdstat_disagrees (sysfs only),
md.mdstat_incomplete (mdstat only), dm.suspended, block.ro_mounted_rw, block.scsi_offline,
storage.incomplete. Evidence quotes the sysfs values and /proc/mdstat lines a finding rests on.
"""
from __future__ import annotations

from collections.abc import Iterable

from inspector.discover.md import MdArray, is_container, missing_slots
from inspector.discover.storage import StorageSection
from inspector.health import md_verdicts
from inspector.health.md_mdstat import mdstat_findings
from inspector.health.md_verdicts import MdFacts, SyncState, container_of, raid10_copies
from inspector.model import Finding, Level, Report, Unknown, known

_ACTION_NAMES = {"recover": "recovery", "resync": "resync", "check": "check", "repair": "repair",
                 "reshape": "reshape"}


def rules(report: Report) -> Iterable[Finding]:
    section = report.section("storage")
    if not isinstance(section, StorageSection):
        return []
    findings: list[Finding] = []
    for array in section.md.values():
        findings.extend(md_findings(array))
    findings.extend(dm_findings(section))
    findings.extend(block_findings(section))
    if _serious(section.problems):
        findings.append(Finding(Level.UNKNOWN, "storage",
                                f"{len(section.problems)} storage read problem(s): "
                                f"{section.problems[0]}", evidence=section.problems[:10],
                                advice="Parts of the storage stack were not read, so no finding "
                                "here does not mean healthy: check by hand (lsblk, cat "
                                "/proc/mdstat, dmsetup ls); run as root with /sys mounted, or "
                                "take a fresh capture.",
                                code="storage.incomplete"))
    return findings


def _serious(problems: list[str]) -> bool:
    """Problems that leave whole parts unknown (not a missing swap file)."""
    return any(p.startswith(("/sys/block", "block devices", "/proc/mdstat line")) or
               "Error" in p for p in problems)


def _md_evidence(array: MdArray, *attrs: str, mdstat: str = "") -> list[str]:
    """The sysfs values, then the /proc/mdstat lines containing `mdstat` (all when empty)."""
    base = f"/sys/block/{array.name}/md"
    lines = [f"{base}/{attr}: {getattr(array, attr)}" for attr in attrs]
    if array.mdstat:
        lines.extend(f"/proc/mdstat: {line}" for line in array.mdstat.lines if mdstat in line)
    return lines


def md_findings(array: MdArray) -> list[Finding]:
    """The verdicts of health.md_verdicts (one table for sysfs and mdstat-only arrays), then
    what only sysfs can tell: mismatches after a check, and where mdstat disagrees."""
    if array.source == "mdstat":
        return mdstat_findings(array)
    out = md_verdicts.judge(_sysfs_facts(array))
    name, entry = array.name, array.mdstat
    if (known(array.mismatch_cnt) and array.mismatch_cnt and array.sync_action in ("idle", None)
            and _level(array) != "raid0"):
        out.append(Finding(Level.WARN, name, f"md array {name}: mismatch_cnt {array.mismatch_cnt} "
                           "after the last check (members differ)",
                           _md_evidence(array, "mismatch_cnt", "sync_action", mdstat=" : "),
                           "on raid1/10 with swap or O_DIRECT writers small counts can be benign; "
                           "otherwise run a repair (echo repair > sync_action) and check the disks",
                           code="md.mismatch"))
    if array.disagreements:
        out.append(Finding(Level.WARN, name, f"/proc/mdstat and sysfs disagree about {name}: "
                           f"{array.disagreements[0]}",
                           array.disagreements
                           + ([f"/proc/mdstat: {line}" for line in entry.lines] if entry else []),
                           "re-read in a moment (a state change can race the two reads); if it "
                           "persists, trust mdadm --detail", code="md.mdstat_disagrees"))
    return out


_READ_ONLY = {"readonly": "read-only", "read-auto": "auto-read-only"}


def _sysfs_facts(array: MdArray) -> MdFacts:
    """sysfs first; /proc/mdstat where sysfs could not be read (and for speed and ETA)."""
    entry = array.mdstat
    level = _level(array)
    state = array.array_state if isinstance(array.array_state, str) and array.array_state else None
    # the members whose sysfs state was read, with it
    members = [(m, m.state) for m in array.members if isinstance(m.state, list)]
    faulty = {m.name for m, state in members if "faulty" in state}
    if entry:
        faulty |= {m.name for m in entry.members if "faulty" in m.flags}
    raid_disks = (array.raid_disks if isinstance(array.raid_disks, int) else
                  entry.raid_disks if entry else None)
    return MdFacts(
        name=array.name, level=level,
        running=state not in ("inactive", "clear") if state else (entry.active if entry else True),
        state_word=state or "inactive",
        container=_is_container(array), volume_of=container_of(array.metadata_version)
        or (container_of(entry.metadata) if entry else None),
        broken=state == "broken" if state else bool(entry and entry.broken),
        raid_disks=raid_disks, missing=_missing(array), in_sync=_in_sync(array, raid_disks),
        copies=_copies(array),
        faulty=sorted(faulty),
        spares=([m.name for m, state in members if "spare" in state and m.slot is None]
                if array.members
                else [m.name for m in entry.members if "spare" in m.flags] if entry else []),
        # a spare given a slot is what a recovery writes
        rebuild_onto=[m.name for m, state in members
                      if "spare" in state and isinstance(m.slot, int)],
        sync=_sync_state(array),
        read_only=_READ_ONLY.get(state) if state else (entry.read_only if entry else None),
        evidence={"state": _md_evidence(array, "array_state"),
                  "degraded": _md_evidence(array, "degraded", "raid_disks", mdstat=" blocks"),
                  "faulty": [f"/sys/block/{array.name}/md/dev-{m.name}/state: {','.join(state)}"
                             for m, state in members if "faulty" in state]
                  + [f"/proc/mdstat: {line}" for line in (entry.lines[:1] if entry else [])],
                  "sync": _md_evidence(array, "sync_action", "sync_completed", mdstat="=")})


def _is_container(array: MdArray) -> bool:
    """An IMSM/DDF container (metadata external:imsm, no raid level of its own)."""
    if array.mdstat is not None and is_container(array.mdstat):
        return True
    meta = array.metadata_version
    return (isinstance(meta, str) and meta.startswith("external:") and "/" not in meta
            and (not known(array.level) or array.level in ("", "container")))


def _missing(array: MdArray) -> int | None:
    """md/degraded; mdstat's count when sysfs says 0 or could not be read (a disagreement
    the cross-check reports too)."""
    sysfs = array.degraded if isinstance(array.degraded, int) else None
    mdstat = missing_slots(array.mdstat) if array.mdstat else None
    if sysfs:
        return sysfs
    return mdstat if mdstat is not None else sysfs


def _in_sync(array: MdArray, raid_disks: int | None) -> list[bool] | None:
    """Per raid slot: is an in-sync device in it (the member slots and states, else mdstat's
    [U_]); None when neither is complete or it does not match the missing count."""
    missing = _missing(array)
    picture = None
    stated = [(m.slot, m.state) for m in array.members
              if isinstance(m.state, list) and not isinstance(m.slot, Unknown)]
    if raid_disks and array.members and len(stated) == len(array.members):
        picture = [any(member_slot == slot and "in_sync" in state and "faulty" not in state
                       for member_slot, state in stated) for slot in range(raid_disks)]
    entry = array.mdstat
    if (picture is None or picture.count(False) != missing) and entry and entry.status \
            and len(entry.status) == raid_disks:
        picture = [c == "U" for c in entry.status]
    return picture if picture is not None and picture.count(False) == missing else None


def _copies(array: MdArray) -> tuple[int, int] | None:
    """raid10's (near, far): md/layout, else mdstat's "N near-copies"."""
    if isinstance(array.layout, int) and array.layout > 0:
        near, far = raid10_copies(array.layout)
        if near * far > 1:
            return near, far
    entry = array.mdstat
    if entry is not None:
        return entry.near_copies or 1, entry.far_copies or 1
    return None


def _sync_state(array: MdArray) -> SyncState | None:
    action = array.sync_action
    progress = array.mdstat.progress if array.mdstat else None
    word = _ACTION_NAMES.get(action) if isinstance(action, str) else None
    if word is None and progress is not None:
        word = progress.action
    if word is None:
        return None
    state = ("delayed" if array.sync_completed == "delayed" else
             progress.state if progress is not None and progress.state != "running" else "running")
    return SyncState(word, state, array.progress_percent,
                     array.speed_kib_s if isinstance(array.speed_kib_s, int) else None,
                     array.eta_minutes)


def _level(array: MdArray) -> str:
    if known(array.level) and array.level:
        return array.level
    if array.mdstat and array.mdstat.level:
        return array.mdstat.level
    return "md"


def dm_findings(section: StorageSection) -> list[Finding]:
    out: list[Finding] = []
    for name, device in section.dm.items():
        if device.suspended is not True:
            continue
        dev = section.devices.get(name)
        users = (dev.holders if dev else []) + ([m.mountpoint for m in dev.mounts] if dev else [])
        level = Level.CRIT if users else Level.WARN
        label = device.dm_name if known(device.dm_name) else name
        message = f"dm device {label} ({device.kind}) is suspended: IO to it blocks"
        if users:
            message += f"; used by {', '.join(users)}"
        out.append(Finding(level, name, message, [f"/sys/block/{name}/dm/suspended: 1",
                                                  f"/sys/block/{name}/dm/name: {device.dm_name}"],
                           "a suspend left behind by a failed lvm/multipath/cryptsetup operation: "
                           f"dmsetup resume {label} (after checking why it was suspended)",
                           code="dm.suspended"))
    return out


def block_findings(section: StorageSection) -> list[Finding]:
    out: list[Finding] = []
    for name, dev in section.devices.items():
        if dev.read_only is True:
            rw = [m for m in dev.mounts if not m.read_only]
            if rw:
                out.append(Finding(Level.WARN, name, f"{name} is a read-only block device but "
                                   f"{', '.join(m.mountpoint for m in rw)} is mounted read-write: "
                                   "writes will fail", [f"/sys/block/{_sys(dev)}/ro: 1"] +
                                   [f"mountinfo: {m.source} {m.mountpoint} {m.fstype} {m.options}"
                                    for m in rw],
                                   "find out why the device went read-only (media errors, a flash "
                                   "card in read-only mode, a SAN path) before remounting",
                                   code="block.ro_mounted_rw"))
        if isinstance(dev.state, str) and dev.state not in ("running",) and dev.parent is None:
            # "path of" and multipathd only for a multipath member: an offline LVM PV is no
            # path, and multipathd has nothing to say about it
            mpath = [h for h in dev.holders if h in section.dm and section.dm[h].kind == "mpath"]
            others = [_label(section, h) for h in dev.holders if h not in mpath]
            holders = "; ".join(
                ([f"path of {', '.join(_label(section, h) for h in mpath)}"] if mpath else []) +
                ([f"under {', '.join(others)}"] if others else []))
            advice = ("check the HBA/cabling/SAN; multipathd -k'show paths' for path states"
                      if mpath else "check the disk, its cabling and the HBA (dmesg); every "
                      "device above it fails IO until it is back")
            out.append(Finding(Level.CRIT if dev.state in ("offline", "transport-offline") else Level.WARN,
                               name, f"SCSI device {name}{f' ({holders})' if holders else ''} "
                               f"is {dev.state}",
                               [f"/sys/block/{name}/device/state: {dev.state}"], advice,
                               code="block.scsi_offline"))
    return out


def _label(section: StorageSection, name: str) -> str:
    dm = section.dm.get(name)
    return dm.dm_name if dm is not None and known(dm.dm_name) else name


def _sys(dev) -> str:
    return f"{dev.parent}/{dev.name}" if dev.parent else dev.name
