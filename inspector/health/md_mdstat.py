"""Health of md arrays known from /proc/mdstat alone (MdArray.source "mdstat": a sosreport, a
pasted mdstat, a capture without md sysfs). health.storage calls `mdstat_findings` for them.

Codes, shared with the sysfs rules: md.inactive, md.failed, md.degraded, md.member_faulty,
md.sync_running, md.sync_waiting, md.read_only, md.mdstat_incomplete.

How bad a missing member is depends on how many more failures the array survives: raid1 of N
devices survives N-1, raid4/5 one, raid6 two, raid10 one fewer than the copies of each chunk
(worked out per chunk from the [U_U_] slots and the near/far layout), raid0 and linear none.
- data gone (more missing than the level survives, a raid0/linear member faulty, or the kernel
  says "broken"): CRIT md.failed
- degraded, a recovery running or queued: WARN md.degraded (being repaired; wait)
- degraded, nothing rebuilding: CRIT when no redundancy is left, else WARN
- resync, check, repair, reshape (or a replacement's recovery) on a whole array: OK, information
- inactive: CRIT, except IMSM/DDF containers, inactive by design (their member arrays are not)
- read-only: WARN; auto-read-only: OK (it turns read-write on the first write)
"""
from __future__ import annotations

from dataclasses import dataclass

from inspector.discover.md import MdArray, MdstatArray, is_container, missing_slots
from inspector.model import Finding, Level, known

_NO_REDUNDANCY = ("raid0", "linear")


@dataclass
class Redundancy:
    """How many failures an array takes, from its mdstat level, [N/M] and [U_] slots."""
    missing: int     # slots without an in-sync device
    survives: int    # failures the level survives when whole
    left: int        # further failures it survives now; negative: data already lost


def redundancy(level: str, entry: MdstatArray) -> Redundancy | None:
    """None when mdstat does not show enough ([N/M] missing, a level without a rule)."""
    missing = missing_slots(entry)
    disks = entry.raid_disks
    if missing is None or disks is None or disks <= 0:
        return None
    if level in ("raid1", "multipath"):
        survives = disks - 1
    elif level in ("raid4", "raid5"):
        survives = 1
    elif level == "raid6":
        survives = 2
    elif level == "raid10":
        return _raid10(entry, disks, missing)
    else:
        return None
    return Redundancy(missing, survives, survives - missing)


def _raid10(entry: MdstatArray, disks: int, missing: int) -> Redundancy:
    # mdstat prints "N near-copies" / "N far-copies" only when N > 1
    near, far = entry.near_copies or 1, entry.far_copies or 1
    copies = min(near * far, disks)
    if entry.status is None or len(entry.status) != disks:   # worst case: the missing share a chunk
        return Redundancy(missing, copies - 1, copies - 1 - missing)
    in_sync = [c == "U" for c in entry.status]
    # the slots holding one chunk's copies: the near copies side by side, each far (or offset)
    # copy shifted by `near` slots, as md's raid10_find_phys places them
    chunk_slots = [{(start * near + j + f * near) % disks for j in range(near) for f in range(far)}
                   for start in range(disks)]
    left = min(sum(in_sync[s] for s in slots) for slots in chunk_slots) - 1
    return Redundancy(missing, copies - 1, left)


def mdstat_findings(array: MdArray) -> list[Finding]:
    entry = array.mdstat
    if entry is None or is_container(entry):
        return []
    name, level = array.name, _level(array)
    evidence = [f"/proc/mdstat: {line}" for line in entry.lines] + [
        f"/sys/block/{name}/md: not in this root; judged from /proc/mdstat alone"]
    faulty = [m.name for m in entry.members if "faulty" in m.flags]
    if not entry.active:
        return [_inactive(name, entry, faulty, evidence)] + (
            [_faulty(name, faulty, Level.CRIT, evidence)] if faulty else [])

    out: list[Finding] = []
    state = _degradation(array, level, entry, faulty, evidence)
    if state is not None:
        out.append(state)
    whole = state is None
    if faulty and level not in _NO_REDUNDANCY:
        # as bad as the array's state; when that is unknown, as bad as a degraded array gets
        out.append(_faulty(name, faulty, Level.WARN if whole else
                           state.level if state.level in (Level.WARN, Level.CRIT) else Level.CRIT,
                           evidence))
    out.extend(_sync(name, entry, array, whole, evidence))
    if entry.read_only == "read-only":
        out.append(Finding(Level.WARN, name, f"md array {name} is read-only: writes to it fail",
                           evidence, f"mdadm --readwrite /dev/{name} if it should take writes "
                           "(it was started or set read-only on purpose, or by mdadm --readonly)",
                           code="md.read_only"))
    elif entry.read_only == "auto-read-only":
        out.append(Finding(Level.OK, name, f"md array {name} is auto-read-only: it turns "
                           "read-write on its first write", evidence,
                           f"nothing to do; a pending resync starts with the first write "
                           f"(mdadm --readwrite /dev/{name} starts it now)", code="md.read_only"))
    return out


def _level(array: MdArray) -> str:
    return array.level if known(array.level) and array.level else "md"


def _inactive(name: str, entry: MdstatArray, faulty: list[str], evidence: list[str]) -> Finding:
    message = f"md array {name} is inactive (not running)"
    if entry.metadata and entry.metadata.startswith("external:/"):
        container = entry.metadata.split("/")[1]
        message += f"; it is a volume of container {container}"
    if faulty:
        message += f"; faulty member(s) {', '.join(faulty)}"
    return Finding(Level.CRIT, name, message, evidence,
                   f"mdadm --detail /dev/{name} and mdadm --examine of its members say why it did "
                   f"not start (a missing member, mismatched event counts); mdadm --stop /dev/{name}, "
                   "then mdadm --assemble --scan (--run starts it degraded: only after checking)",
                   code="md.inactive")


def _degradation(array: MdArray, level: str, entry: MdstatArray, faulty: list[str],
                 evidence: list[str]) -> Finding | None:
    """md.failed, md.degraded or md.mdstat_incomplete for an active array; None when whole."""
    name = array.name
    if entry.broken:
        return broken_finding(name, level, faulty, evidence)
    if level in _NO_REDUNDANCY:
        if not faulty:
            return None
        return Finding(Level.CRIT, name, f"md array {name} ({level}) has failed: member(s) "
                       f"{', '.join(faulty)} faulty and {level} has no redundancy, so its data "
                       "is not readable", evidence, _FAILED_ADVICE.format(name=name), code="md.failed")
    if missing_slots(entry) == 0:
        return None
    state = redundancy(level, entry)
    if state is None:
        if not known(array.level):
            why = "/proc/mdstat does not show its raid level"
        elif entry.raid_disks is None:
            why = "/proc/mdstat does not show its [n/m] member count"
        elif missing_slots(entry) is None:
            why = f"its [{entry.raid_disks}/{entry.active_disks}] [{entry.status or ''}] do not add up"
        else:
            why = f"Inspector has no redundancy rule for {level}"
        return Finding(Level.UNKNOWN, name, f"md array {name} ({level}): {why}, so whether it "
                       "is degraded is unknown",
                       evidence, f"on the host: mdadm --detail /dev/{name}; or a complete copy of "
                       "/proc/mdstat", code="md.mdstat_incomplete")
    picture = f"{state.missing} of {entry.raid_disks} devices missing" + (
        f" [{entry.status}]" if entry.status else "")
    if state.left < 0:
        return Finding(Level.CRIT, name, f"md array {name} ({level}) has failed: {picture}, more "
                       f"than {level} survives ({state.survives}): its data is not readable",
                       evidence, _FAILED_ADVICE.format(name=name), code="md.failed")
    progress = entry.progress
    # a recovery writes the missing slots; a resync only makes the present ones agree. A
    # waiting sync is printed "resync=DELAYED" whatever its kind: on a degraded array that
    # is the recovery queued behind another array on the same disks
    rebuilding = progress is not None and (
        (progress.action == "recovery" and progress.state == "running") or progress.state == "delayed")
    message = f"md array {name} ({level}) is degraded: {picture}; "
    message += ("no redundancy left" if state.left == 0 else
                f"it survives {state.left} more failure{'s' if state.left > 1 else ''}")
    if rebuilding:
        message += (", recovery under way" if progress.state == "running" else
                    ", recovery queued behind another array on the same disks")
        return Finding(Level.WARN, name, message, evidence,
                       "a replacement is rebuilding: do not pull another member or add a second "
                       f"disk; watch /proc/mdstat (on the host: cat /sys/block/{name}/md/sync_action) "
                       "until it is idle", code="md.degraded")
    spares = [m.name for m in entry.members if "spare" in m.flags]
    message += ", nothing rebuilding"
    advice = (f"mdadm --detail /dev/{name} names the missing slot and the failed device; check "
              f"that disk (smartctl -a, dmesg), replace it and mdadm /dev/{name} --add the new one")
    if spares:
        message += (f" though spare {spares[0]} is there" if len(spares) == 1 else
                    f" though spares {', '.join(spares)} are there")
        advice = (f"a spare is present but not rebuilding: mdadm --detail /dev/{name} says why "
                  f"(an auto-read-only array starts on its first write: mdadm --readwrite /dev/{name})")
    if progress is not None and progress.state == "pending":
        message += " (resync=PENDING: it waits for the first write)"
    return Finding(Level.CRIT if state.left == 0 else Level.WARN, name, message, evidence, advice,
                   code="md.degraded")


def broken_finding(name: str, level: str, faulty: list[str], evidence: list[str]) -> Finding:
    """The kernel's own verdict (array_state and mdstat "broken", kernels 5.14+)."""
    what = f"member(s) {', '.join(faulty)} failed" if faulty else "a member it cannot do without failed"
    return Finding(Level.CRIT, name, f"md array {name} ({level}) is broken: {what}, so its IO "
                   "fails", evidence, _FAILED_ADVICE.format(name=name), code="md.failed")


_FAILED_ADVICE = ("stop writers first; compare mdadm --detail /dev/{name} and mdadm --examine of "
                  "each member (Events) before any mdadm --assemble --force; restore from backup "
                  "if a member is truly gone")


def _faulty(name: str, faulty: list[str], level: Level, evidence: list[str]) -> Finding:
    advice = (f"mdadm /dev/{name} --remove /dev/{faulty[0]} (mdadm --detail shows it faulty), "
              f"replace the disk, then mdadm /dev/{name} --add the new one")
    if level == Level.WARN:   # the array is whole: a failed spare, or a disk --replace finished with
        advice = (f"the array is whole: mdadm /dev/{name} --remove /dev/{faulty[0]}, then check "
                  "or replace that disk (smartctl -a, dmesg)")
    return Finding(level, name, f"md array {name}: faulty member(s) {', '.join(faulty)}", evidence,
                   advice, code="md.member_faulty")


def _sync(name: str, entry: MdstatArray, array: MdArray, whole: bool,
          evidence: list[str]) -> list[Finding]:
    progress = entry.progress
    if progress is None:
        return []
    sync_lines = [e for e in evidence if "=" in e] or evidence
    if progress.state != "running":
        word = progress.state   # delayed | pending
        why = ("another array on the same disks syncs first" if word == "delayed" else
               "the array is auto-read-only: it starts on the first write")
        return [Finding(Level.OK if whole else Level.WARN, name,
                        f"md array {name}: {progress.action} {word} ({why})", sync_lines,
                        "nothing to do: md starts it by itself (watch /proc/mdstat)" if word == "delayed"
                        else f"nothing to do, or mdadm --readwrite /dev/{name} to start it now",
                        code="md.sync_waiting")]
    parts = [f"md array {name}: {progress.action} running"]
    if array.progress_percent is not None:
        parts.append(f"{array.progress_percent:.1f}% done")
    if isinstance(array.speed_kib_s, int):
        parts.append(f"at {array.speed_kib_s / 1024:.1f} MiB/s")
    if array.eta_minutes is not None:
        minutes = array.eta_minutes
        parts.append(f"ETA {minutes:.1f} min" if minutes < 90 else f"ETA {minutes / 60:.1f} h")
    if whole:
        advice = (f"nothing to do: a {progress.action} of a whole array; IO is slower until it ends "
                  f"(on the host: cat /sys/block/{name}/md/sync_action; limits in "
                  "/proc/sys/dev/raid/speed_limit_max)")
        if progress.action == "check":
            advice = (f"nothing to do: a scrub (checkarray or the mdcheck timer); read "
                      f"/sys/block/{name}/md/mismatch_cnt when it ends")
        return [Finding(Level.OK, name, ", ".join(parts), sync_lines, advice, code="md.sync_running")]
    return [Finding(Level.WARN, name, ", ".join(parts), sync_lines,
                    "redundancy is reduced until it ends: avoid heavy IO and do not pull another "
                    "member", code="md.sync_running")]
