"""The md verdict table, one for both ways an array is known: from /sys/block/mdX/md
(health.storage) and from /proc/mdstat alone (health.md_mdstat). A host and its sosreport
must get the same verdict, so both paths reduce what they read to `MdFacts` and `judge` them.

How bad a missing member is depends on how many more failures the array survives
(`redundancy`): raid1 of N devices N-1, raid4/5 one, raid6 two, raid10 one fewer than the
copies of each chunk (worked out per chunk from the in-sync slots and the near/far layout),
raid0 and linear none.

  state of the array                                              level  code
  data gone: more missing than the level survives, a raid0/linear
    member faulty, or the kernel says "broken"                    CRIT   md.failed
  degraded, no redundancy left (one more failure loses data),
    whether or not a recovery runs or waits                       CRIT   md.degraded
  degraded, how many more failures it survives unknown           CRIT   md.degraded
  degraded, redundancy left                                       WARN   md.degraded
  faulty member: as bad as the array's state (CRIT when that is
    unknown); WARN on a whole array (a failed spare, a finished
    --replace); none on raid0/linear (md.failed names it)         ...    md.member_faulty
  resync, check, repair, reshape or a replacement's recovery on a
    whole array, running or delayed                               OK     md.sync_running/_waiting
  the same on an array that is not whole                          WARN   md.sync_running/_waiting
  resync=PENDING (auto-read-only, read-only, frozen): redundancy
    unverified until it runs                                      WARN   md.sync_waiting
  inactive, except IMSM/DDF containers (inactive by design)       CRIT   md.inactive
  read-only WARN; auto-read-only OK (read-write on first write)          md.read_only
  whether it is degraded unknown (mdstat only: no [n/m])          UNKNOWN md.mdstat_incomplete

Rules only one source can feed stay with it: md.mismatch and md.mdstat_disagrees need sysfs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from inspector.model import Finding, Level

NO_REDUNDANCY = ("raid0", "linear")


@dataclass
class Redundancy:
    """How many failures an array takes."""
    missing: int     # slots without an in-sync device
    survives: int    # failures the level survives when whole
    left: int        # further failures it survives now; negative: data already lost


def redundancy(level: str, raid_disks: int | None, missing: int | None,
               in_sync: list[bool] | None = None,
               copies: tuple[int, int] | None = None) -> Redundancy | None:
    """`in_sync`: one flag per raid slot (needed for raid10's per-chunk answer; without it the
    missing are assumed to share a chunk). `copies`: raid10's (near, far). None when the
    facts do not tell (no member count, a level without a rule, raid10 without its layout)."""
    if missing is None or raid_disks is None or raid_disks <= 0 or missing < 0:
        return None
    if level in ("raid1", "multipath"):
        survives = raid_disks - 1
    elif level in ("raid4", "raid5"):
        survives = 1
    elif level == "raid6":
        survives = 2
    elif level == "raid10" and copies is not None:
        return _raid10(raid_disks, missing, in_sync, copies)
    else:
        return None
    return Redundancy(missing, survives, survives - missing)


def _raid10(disks: int, missing: int, in_sync: list[bool] | None,
            copies: tuple[int, int]) -> Redundancy:
    near, far = max(copies[0], 1), max(copies[1], 1)
    total = min(near * far, disks)
    if in_sync is None or len(in_sync) != disks or in_sync.count(False) != missing:
        return Redundancy(missing, total - 1, total - 1 - missing)   # worst case
    # the slots holding one chunk's copies: the near copies side by side, each far (or offset)
    # copy shifted by `near` slots, as md's raid10_find_phys places them
    chunk_slots = [{(start * near + j + f * near) % disks for j in range(near) for f in range(far)}
                   for start in range(disks)]
    left = min(sum(in_sync[s] for s in slots) for slots in chunk_slots) - 1
    return Redundancy(missing, total - 1, left)


def raid10_copies(layout: int) -> tuple[int, int]:
    """(near, far) of md/layout for raid10 (far counts offset copies too)."""
    return layout & 0xFF, (layout >> 8) & 0xFF


def container_of(metadata: object) -> str | None:
    """The container an IMSM/DDF volume lives in ("external:/md127/0" -> md127)."""
    if isinstance(metadata, str) and metadata.startswith("external:/"):
        return metadata.split("/")[1] or None
    return None


@dataclass
class SyncState:
    """A resync, recovery, check, repair or reshape, running or waiting."""
    word: str                     # recovery resync check repair reshape
    state: str                    # running | delayed | pending
    percent: float | None = None
    speed_kib_s: int | None = None
    eta_minutes: float | None = None


@dataclass
class MdFacts:
    """What the verdicts rest on, read from sysfs or from /proc/mdstat alone."""
    name: str
    level: str                           # raid1 ...; "md" when not known
    running: bool                        # False: inactive (or clear)
    state_word: str = "inactive"         # how a stopped array's state is named
    container: bool = False              # an IMSM/DDF container: not judged
    volume_of: str | None = None         # the container of an IMSM/DDF volume
    broken: bool = False                 # the kernel's "broken"
    raid_disks: int | None = None
    missing: int | None = None           # slots without an in-sync device; None: unknown
    in_sync: list[bool] | None = None    # per raid slot, when known
    copies: tuple[int, int] | None = None  # raid10 (near, far)
    faulty: list[str] = field(default_factory=list)
    spares: list[str] = field(default_factory=list)        # spares not given a slot
    rebuild_onto: list[str] = field(default_factory=list)  # spares a recovery writes
    sync: SyncState | None = None
    read_only: str | None = None         # "read-only" | "auto-read-only"
    unknown_why: str | None = None       # why `missing` is unknown (md.mdstat_incomplete)
    # evidence lines by the part of the verdict they back: state, degraded, faulty, sync,
    # read_only; a part not given uses "state"
    evidence: dict[str, list[str]] = field(default_factory=dict)

    def quote(self, part: str) -> list[str]:
        return self.evidence.get(part) or self.evidence.get("state", [])


def judge(f: MdFacts) -> list[Finding]:
    if f.container:
        return []
    if not f.running:
        return [_inactive(f)] + ([_faulty(f, Level.CRIT)] if f.faulty else [])
    out: list[Finding] = []
    state = _degradation(f)
    if state is not None:
        out.append(state)
    whole = state is None and (f.missing == 0 or f.level in NO_REDUNDANCY)
    if f.faulty and f.level not in NO_REDUNDANCY:
        out.append(_faulty(f, Level.WARN if whole else
                           state.level if state is not None and state.level in (Level.WARN, Level.CRIT)
                           else Level.CRIT))
    if f.sync is not None:
        out.append(_sync(f, f.sync, whole))
    if f.read_only == "read-only":
        out.append(Finding(Level.WARN, f.name, f"md array {f.name} is read-only: writes to it fail",
                           f.quote("read_only"), f"mdadm --readwrite /dev/{f.name} if it should take "
                           "writes (it was started or set read-only on purpose, or by mdadm --readonly)",
                           code="md.read_only"))
    elif f.read_only == "auto-read-only":
        out.append(Finding(Level.OK, f.name, f"md array {f.name} is auto-read-only: it turns "
                           "read-write on its first write", f.quote("read_only"),
                           "nothing to do; a pending resync starts with the first write "
                           f"(mdadm --readwrite /dev/{f.name} starts it now)", code="md.read_only"))
    return out


def _inactive(f: MdFacts) -> Finding:
    message = f"md array {f.name} is {f.state_word} (not running)"
    if f.volume_of:
        message += f"; it is a volume of container {f.volume_of}"
    if f.faulty:
        message += f"; faulty member(s) {', '.join(f.faulty)}"
    return Finding(Level.CRIT, f.name, message, f.quote("state"),
                   f"mdadm --detail /dev/{f.name} and mdadm --examine of its members say why it did "
                   f"not start (a missing member, mismatched event counts); mdadm --stop /dev/{f.name}, "
                   "then mdadm --assemble --scan (--run starts it degraded: only after checking)",
                   code="md.inactive")


_FAILED_ADVICE = ("stop writers first; compare mdadm --detail /dev/{name} and mdadm --examine of "
                  "each member (Events) before any mdadm --assemble --force; restore from backup "
                  "if a member is truly gone")


def _degradation(f: MdFacts) -> Finding | None:
    """md.failed, md.degraded or md.mdstat_incomplete for a running array; None when whole
    (or when nothing says whether it is)."""
    name, level = f.name, f.level
    if f.broken:
        what = (f"member(s) {', '.join(f.faulty)} failed" if f.faulty else
                "a member it cannot do without failed")
        return Finding(Level.CRIT, name, f"md array {name} ({level}) is broken: {what}, so its IO "
                       "fails", f.quote("state"), _FAILED_ADVICE.format(name=name), code="md.failed")
    if level in NO_REDUNDANCY:
        if not f.faulty:
            return None
        return Finding(Level.CRIT, name, f"md array {name} ({level}) has failed: member(s) "
                       f"{', '.join(f.faulty)} faulty and {level} has no redundancy, so its data "
                       "is not readable", f.quote("faulty"), _FAILED_ADVICE.format(name=name),
                       code="md.failed")
    if f.missing is None:
        if f.unknown_why is None:
            return None
        return Finding(Level.UNKNOWN, name, f"md array {name} ({level}): {f.unknown_why}, so "
                       "whether it is degraded is unknown", f.quote("state"),
                       f"on the host: mdadm --detail /dev/{name}; or a complete copy of /proc/mdstat",
                       code="md.mdstat_incomplete")
    if f.missing == 0:
        return None
    state = redundancy(level, f.raid_disks, f.missing, f.in_sync, f.copies)
    picture = f"{f.missing} of {f.raid_disks if f.raid_disks is not None else '?'} devices missing"
    if f.in_sync is not None:
        picture += f" [{''.join('U' if s else '_' for s in f.in_sync)}]"
    if state is not None and state.left < 0:
        return Finding(Level.CRIT, name, f"md array {name} ({level}) has failed: {picture}, more "
                       f"than {level} survives ({state.survives}): its data is not readable",
                       f.quote("degraded"), _FAILED_ADVICE.format(name=name), code="md.failed")
    message = f"md array {name} ({level}) is degraded: {picture}; " + (
        "how many more failures it survives is unknown" if state is None else
        "no redundancy left" if state.left == 0 else
        f"it survives {state.left} more failure{'s' if state.left > 1 else ''}")
    level_now = Level.CRIT if state is None or state.left == 0 else Level.WARN
    sync = f.sync
    onto = f" onto {', '.join(f.rebuild_onto)}" if f.rebuild_onto else ""
    # a recovery writes the missing slots; a resync only makes the present ones agree. A
    # waiting sync is printed "resync=DELAYED" whatever its kind: on a degraded array that is
    # the recovery queued behind another array on the same disks
    if sync is not None and (sync.state == "delayed" or
                             (sync.word == "recovery" and sync.state == "running")):
        queued = sync.state == "delayed"
        message += (f", recovery{onto} queued behind another array on the same disks" if queued
                    else f", recovery{onto} under way")
        return Finding(level_now, name, message, f.quote("degraded"),
                       f"a replacement is already {'queued' if queued else 'rebuilding'}{onto}: do "
                       "not add another disk, and do not pull another member; watch /proc/mdstat "
                       "until it is in sync (redundancy stays reduced until then)", code="md.degraded")
    message += ", nothing rebuilding"
    advice = (f"mdadm --detail /dev/{name} names the missing slot and the failed device; check "
              "that disk (smartctl -a, dmesg), then replace or re-add it (mdadm --manage --add)")
    if f.spares:
        message += (f" though spare {f.spares[0]} is there" if len(f.spares) == 1 else
                    f" though spares {', '.join(f.spares)} are there")
        advice = (f"a spare is present but not rebuilding: mdadm --detail /dev/{name} says why "
                  f"(an auto-read-only array starts on its first write: mdadm --readwrite /dev/{name})")
    if sync is not None and sync.state == "pending":
        message += " (resync=PENDING: it waits for the first write)"
    return Finding(level_now, name, message, f.quote("degraded"), advice, code="md.degraded")


def _faulty(f: MdFacts, level: Level) -> Finding:
    first = f.faulty[0]
    advice = (f"mdadm /dev/{f.name} --remove /dev/{first} (mdadm --detail shows it faulty), "
              f"replace the disk, then mdadm /dev/{f.name} --add the new one")
    if level == Level.WARN:   # the array is whole: a failed spare, or a disk --replace finished with
        advice = (f"the array is whole: mdadm /dev/{f.name} --remove /dev/{first}, then check "
                  "or replace that disk (smartctl -a, dmesg)")
    return Finding(level, f.name, f"md array {f.name}: faulty member(s) {', '.join(f.faulty)}",
                   f.quote("faulty"), advice, code="md.member_faulty")


def _sync(f: MdFacts, sync: SyncState, whole: bool) -> Finding:
    name = f.name
    if sync.state == "pending":
        return _pending(f, sync)
    if sync.state != "running":
        return Finding(Level.OK if whole else Level.WARN, name,
                       f"md array {name}: {sync.word} {sync.state} (another array on the same "
                       "disks syncs first)", f.quote("sync"),
                       "nothing to do: md starts it by itself (watch /proc/mdstat)",
                       code="md.sync_waiting")
    parts = [f"md array {name}: {sync.word} running"]
    if sync.percent is not None:
        parts.append(f"{sync.percent:.1f}% done")
    if sync.speed_kib_s is not None:
        parts.append(f"at {sync.speed_kib_s / 1024:.1f} MiB/s")
    if sync.eta_minutes is not None:
        minutes = sync.eta_minutes
        parts.append(f"ETA {minutes:.1f} min" if minutes < 90 else f"ETA {minutes / 60:.1f} h")
    if not whole:
        return Finding(Level.WARN, name, ", ".join(parts), f.quote("sync"),
                       "redundancy is reduced until it ends: avoid heavy IO and do not pull "
                       "another member", code="md.sync_running")
    advice = (f"nothing to do: a {sync.word} of a whole array; IO is slower until it ends "
              "(speed limits: /proc/sys/dev/raid/speed_limit_{min,max})")
    if sync.word == "check":
        advice = (f"nothing to do: a scrub (checkarray or the mdcheck timer); read "
                  f"/sys/block/{name}/md/mismatch_cnt when it ends")
    return Finding(Level.OK, name, ", ".join(parts), f.quote("sync"), advice, code="md.sync_running")


def _pending(f: MdFacts, sync: SyncState) -> Finding:
    """resync=PENDING: md knows the copies may disagree (an unclean stop, an interrupted or
    never-run initial sync: recovery_cp short of the end) and waits to resync until the array
    is writable. Until then a read may return stale data from one copy, and a member lost
    before the resync may take the only good copy of a block with it."""
    name = f.name
    why = ("the array is auto-read-only: the resync starts on its first write"
           if f.read_only == "auto-read-only" else
           "the array is read-only: the resync starts when it is made writable"
           if f.read_only == "read-only" else "md has not started it")
    return Finding(Level.WARN, name,
                   f"md array {name}: {sync.word} pending ({why}); its copies are not known to "
                   "agree, so its redundancy is unverified until the resync runs",
                   list(dict.fromkeys(f.quote("sync") + f.quote("state"))),
                   f"mdadm --readwrite /dev/{name} starts the resync now; watch /proc/mdstat until "
                   "it ends, and do not pull or replace a member before then",
                   code="md.sync_waiting")
