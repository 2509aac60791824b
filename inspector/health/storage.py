"""Health rules for the storage section: md arrays, dm devices, block devices.

Codes (stable): md.degraded, md.inactive, md.sync_running, md.sync_waiting, md.member_faulty,
md.mismatch, md.mdstat_disagrees, dm.suspended, block.ro_mounted_rw, block.scsi_offline,
storage.incomplete, md.failed (array_state broken); for arrays known from /proc/mdstat alone
(health.md_mdstat) also md.read_only and md.mdstat_incomplete. Evidence quotes the sysfs values
and /proc/mdstat lines a finding rests on.
"""
from __future__ import annotations

from typing import Iterable

from inspector.discover.md import MdArray
from inspector.discover.storage import StorageSection
from inspector.health.md_mdstat import broken_finding, mdstat_findings
from inspector.model import Finding, Level, Report, known

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
    if array.source == "mdstat":
        return mdstat_findings(array)
    out: list[Finding] = []
    name = array.name
    if array.array_state in ("inactive", "clear"):
        out.append(Finding(Level.CRIT, name, f"md array {name} is {array.array_state} (not running)",
                           _md_evidence(array, "array_state"),
                           "mdadm --detail / --examine the members; assemble with mdadm --assemble",
                           code="md.inactive"))
    if array.array_state == "broken":
        out.append(broken_finding(name, _level(array), sorted(
            m.name for m in array.members if isinstance(m.state, list) and "faulty" in m.state),
            _md_evidence(array, "array_state")))
    degraded = array.degraded
    entry = array.mdstat
    mdstat_missing = (entry.raid_disks - entry.active_disks
                      if entry and entry.raid_disks is not None and entry.active_disks is not None else 0)
    if (known(degraded) and degraded) or mdstat_missing > 0:
        count = degraded if known(degraded) and degraded else mdstat_missing
        message = (f"md array {name} ({_level(array)}) is degraded: {count} of "
                   f"{array.raid_disks if known(array.raid_disks) else '?'} devices missing")
        advice = ("replace or re-add the missing member (mdadm --manage --add); "
                  "check the failed disk's health first")
        rebuilding = _rebuilding(array)
        if rebuilding is not None:
            # a replacement is already in: "add the missing member" would send the operator to
            # add a second disk to an array that is healing
            onto = f" onto {', '.join(rebuilding)}" if rebuilding else ""
            progress = entry.progress if entry else None
            queued = array.sync_completed == "delayed" or (progress is not None and
                                                           progress.state != "running")
            message += f"; recovery{onto} {'queued' if queued else 'under way'}"
            advice = (f"a replacement is already {'queued' if queued else 'rebuilding'}{onto}: "
                      "do not add another disk; watch /proc/mdstat until it is in sync and spare "
                      "the remaining members (redundancy stays reduced until then)")
        out.append(Finding(Level.CRIT, name, message,
                           _md_evidence(array, "degraded", "raid_disks", mdstat=" blocks"),
                           advice, code="md.degraded"))
    faulty = [m for m in array.members if isinstance(m.state, list) and "faulty" in m.state]
    faulty_names = {m.name for m in faulty}
    if entry:
        faulty_names |= {m.name for m in entry.members if "faulty" in m.flags}
    if faulty_names:
        evidence = [f"/sys/block/{name}/md/dev-{m.name}/state: {','.join(m.state)}" for m in faulty]
        evidence += [f"/proc/mdstat: {line}" for line in (entry.lines[:1] if entry else [])]
        out.append(Finding(Level.CRIT, name, f"md array {name}: faulty member(s) "
                           f"{', '.join(sorted(faulty_names))}", evidence,
                           "mdadm --manage --remove the faulty device, replace it, --add the new one",
                           code="md.member_faulty"))
    out.extend(_sync_findings(array))
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
                           array.disagreements + ([f"/proc/mdstat: {l}" for l in entry.lines] if entry else []),
                           "re-read in a moment (a state change can race the two reads); if it "
                           "persists, trust mdadm --detail", code="md.mdstat_disagrees"))
    return out


def _rebuilding(array: MdArray) -> list[str] | None:
    """Members a recovery writes to (spares given a slot), or None when no recovery runs or
    waits. An empty list: a recovery is under way but its target is not named."""
    progress = array.mdstat.progress if array.mdstat else None
    if array.sync_action != "recover" and not (progress and progress.action == "recovery"):
        return None
    return [m.name for m in array.members if isinstance(m.state, list) and "spare" in m.state
            and isinstance(m.slot, int)]


def _sync_findings(array: MdArray) -> list[Finding]:
    action = array.sync_action
    progress = array.mdstat.progress if array.mdstat else None
    word = _ACTION_NAMES.get(action) if isinstance(action, str) else None
    if word is None and progress is not None:
        word = progress.action
    if word is None:
        return []
    waiting = array.sync_completed == "delayed" or (progress is not None and progress.state != "running")
    evidence = _md_evidence(array, "sync_action", "sync_completed", mdstat="=")
    if waiting:
        return [Finding(Level.WARN, array.name, f"md array {array.name}: {word} is waiting "
                        f"({progress.state if progress else 'delayed'}; another array on the same "
                        "disks syncs first)", evidence,
                        "nothing to do: md runs one sync at a time on shared disks and starts "
                        "this one when the other finishes (watch /proc/mdstat)",
                        code="md.sync_waiting")]
    parts = [f"md array {array.name}: {word} running"]
    if array.progress_percent is not None:
        parts.append(f"{array.progress_percent:.1f}% done")
    if known(array.speed_kib_s) and array.speed_kib_s is not None:
        parts.append(f"at {array.speed_kib_s / 1024:.1f} MiB/s")
    if array.eta_minutes is not None:
        parts.append(f"ETA {_minutes(array.eta_minutes)}")
    advice = ("redundancy is reduced until recovery finishes; avoid heavy IO and do not pull "
              "another member" if word == "recovery" else
              "IO is slower while it runs; speed limits: /proc/sys/dev/raid/speed_limit_{min,max}")
    return [Finding(Level.WARN, array.name, ", ".join(parts), evidence, advice, code="md.sync_running")]


def _minutes(minutes: float) -> str:
    if minutes < 90:
        return f"{minutes:.1f} min"
    return f"{minutes / 60:.1f} h"


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
                                   [f"mountinfo: {m.source} {m.mountpoint} {m.fstype} {m.options}" for m in rw],
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
