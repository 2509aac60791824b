"""Linux software RAID (md): /proc/mdstat parsed, /sys/block/mdX/md read, the two cross-checked.

`parse_mdstat` is a pure function: any text gives an `Mdstat` (lines it cannot place are listed
in `problems`), never an exception. sysfs is the kernel's own state; mdstat adds what sysfs does
not show directly (speed, ETA, the [UU_] picture). When they disagree, the disagreement is kept
as data: a health rule reports it. An array the root has no md sysfs for (a sosreport, a pasted
mdstat, a partial capture) is built from its mdstat lines alone: `array_from_mdstat`, source
"mdstat".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from inspector.model import Unknown, known
from inspector.roots.host import HostRoot

# ----------------------------------------------------------------------------- /proc/mdstat
# "broken" (kernels 5.14+): running, but a member it cannot do without has failed (MD_BROKEN)
_HEADER = re.compile(r"^(?P<name>[^\s:]+)\s*:\s*(?P<state>active|inactive|broken)\b(?P<rest>.*)$")
_MEMBER = re.compile(r"^(?P<name>[^\s\[\]]+)\[(?P<number>\d+)\](?P<flags>(?:\([A-Za-z]\))*)$")
_LEVEL = re.compile(r"^(raid\d+|linear|multipath|faulty|container)$")
_BLOCKS = re.compile(r"^(\d+) blocks\b")
_SUPER = re.compile(r"\bsuper (\S+)")
_CHUNK = re.compile(r"\b(\d+)[kK] (?:chunks?|rounding)\b")
_DISKS = re.compile(r"\[(\d+)/(\d+)\]")
_STATUS = re.compile(r"\[([U_]+)\]")
_PROGRESS = re.compile(
    r"(?P<action>recovery|resync|check|repair|reshape)\s*=\s*(?P<pct>\d+(?:\.\d+)?)%"
    r"(?:\s*\((?P<done>\d+)/(?P<total>\d+)\))?"
    r"(?:\s*finish=(?P<finish>\d+(?:\.\d+)?)min)?"
    r"(?:\s*speed=(?P<speed>\d+)K/sec)?")
# raid10 layouts: "2 near-copies", "2 far-copies", "2 offset-copies" (offset: a far layout
# whose copies sit one chunk apart instead of half a disk apart)
_COPIES = re.compile(r"\b(\d+) (near|far|offset)-copies\b")
_WAITING = re.compile(r"^(?P<action>recovery|resync|check|repair|reshape)\s*=\s*"
                      r"(?P<state>DELAYED|PENDING|delayed|pending)\s*$")
# mdstat member flags, in the words of sysfs dev-X/state
MDSTAT_FLAGS = {"F": "faulty", "S": "spare", "W": "write_mostly", "R": "replacement", "J": "journal"}


@dataclass
class MdstatMember:
    """A member device on an array's line of /proc/mdstat ("sdb1[2](F)")."""
    name: str            # the member block device (sdb1)
    number: int          # the [N] of mdstat: the superblock's device number, not the raid slot
    flags: list[str] = field(default_factory=list)   # faulty, spare, write_mostly, replacement ...


@dataclass
class MdstatProgress:
    """The sync line of an array in /proc/mdstat ("recovery = 8.5% (16775552/195310144) ...")."""
    action: str                     # recovery resync check repair reshape
    state: str                      # running | delayed | pending
    percent: float | None = None    # percent done; None while delayed or pending
    done_kib: int | None = None     # KiB done (the 1K blocks before the slash)
    total_kib: int | None = None    # KiB to do in all (the 1K blocks after the slash)
    finish_minutes: float | None = None  # kernel's estimate of minutes left (finish=17.0min)
    speed_kib_s: int | None = None  # current rate in KiB/s (speed=259783K/sec)


@dataclass
class MdstatArray:
    """One array's lines in /proc/mdstat."""
    name: str                              # md0, md127 ...
    active: bool                           # "active" or "broken" (true), "inactive" (false)
    # "broken" after the colon: the kernel keeps it running but IO fails (a raid0/linear member
    # or the last working member of a mirror failed); array_state says "broken" too
    broken: bool = False
    read_only: str | None = None           # "read-only" | "auto-read-only"
    level: str | None = None               # raid1, raid5, linear ...; None when not shown
    members: list[MdstatMember] = field(default_factory=list)  # as listed, with their flags
    blocks_kib: int | None = None          # array size in KiB ("N blocks" are 1K blocks)
    metadata: str | None = None            # "super 1.2" -> 1.2; None: not shown (0.90 shows none)
    chunk_kib: int | None = None           # chunk size in KiB ("512k chunks")
    raid_disks: int | None = None          # devices the array should have: N of [N/M]
    active_disks: int | None = None        # devices working now: M of [N/M]; M < N is degraded
    status: str | None = None              # "UU_" as in [UU_]: U in sync, _ missing, by raid slot
    near_copies: int | None = None         # raid10 "N near-copies"; None when not shown
    far_copies: int | None = None          # raid10 "N far-copies" or "N offset-copies"
    far_offset: bool = False               # the far copies are "offset-copies"
    progress: MdstatProgress | None = None  # a running or waiting resync/recovery/check ...
    # the write-intent bitmap line after "bitmap:", raw: "0/2 pages [0KB], 65536KB chunk"
    bitmap: str | None = None
    lines: list[str] = field(default_factory=list)   # the raw lines: evidence for findings


@dataclass
class Mdstat:
    """/proc/mdstat, parsed."""
    personalities: list[str] = field(default_factory=list)   # md levels loaded: raid1, raid6 ...
    arrays: dict[str, MdstatArray] = field(default_factory=dict)  # by array name
    problems: list[str] = field(default_factory=list)  # lines the parser could not place


def parse_mdstat(text: str) -> Mdstat:
    """Parse /proc/mdstat. Never raises; unplaceable lines are named in `problems`."""
    result = Mdstat()
    current: MdstatArray | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        try:
            current = _parse_line(result, current, number, raw)
        except ValueError as exc:  # int() of a number longer than Python accepts (4300 digits)
            result.problems.append(f"line {number}: unparsable number: {exc}"[:120])
            current = None
    return result


def _parse_line(result: Mdstat, current: MdstatArray | None, number: int, raw: str) -> MdstatArray | None:
    """One line of /proc/mdstat into `result`; returns the array later detail lines belong to."""
    line = raw.rstrip()
    stripped = line.strip()
    if not stripped:
        return None
    if stripped.startswith("Personalities"):
        result.personalities = re.findall(r"\[([^\]]+)\]", stripped)
        return None
    if stripped.startswith(("unused devices", "read_ahead", "Event:")):
        return None   # read_ahead and Event: lines of 2.4/2.6-era kernels carry no array state
    # By content, not indentation: a copy pasted into a ticket or an e-mail often lost the
    # indentation of the detail lines (or indented everything)
    header = _HEADER.match(stripped)
    if header is not None:
        current = _parse_header(header, number, result.problems)
        current.lines.append(stripped)
        result.arrays[current.name] = current
        return current
    if current is None:
        what = "detail line outside an array" if line[0].isspace() or _is_detail(stripped) else "unrecognised"
        result.problems.append(f"line {number}: {what}: {stripped[:80]!r}")
        return None
    current.lines.append(stripped)
    if not _parse_detail(current, stripped):
        result.problems.append(f"line {number}: unrecognised detail of {current.name}: {stripped[:80]!r}")
    return current


def _parse_header(match: re.Match, number: int, problems: list[str]) -> MdstatArray:
    array = MdstatArray(name=match["name"], active=match["state"] != "inactive",
                        broken=match["state"] == "broken")
    for token in match["rest"].split():
        if token in ("(read-only)", "(auto-read-only)"):
            array.read_only = token.strip("()")
        elif array.level is None and not array.members and _LEVEL.match(token):
            array.level = token
        else:
            member = _MEMBER.match(token)
            if member is None:
                problems.append(f"line {number}: unrecognised member {token[:40]!r} of {array.name}")
                continue
            flags = [MDSTAT_FLAGS.get(f, f"flag-{f}") for f in re.findall(r"\(([A-Za-z])\)", member["flags"])]
            array.members.append(MdstatMember(member["name"], int(member["number"]), flags))
    return array


def _is_detail(line: str) -> bool:
    """Whether a line reads as one of an array's detail lines (without placing it)."""
    return _parse_detail(MdstatArray(name="", active=False), line)


def _parse_detail(array: MdstatArray, line: str) -> bool:
    blocks = _BLOCKS.match(line)
    if blocks:
        array.blocks_kib = int(blocks[1])
        if (m := _SUPER.search(line)):
            array.metadata = m[1]
        if (m := _CHUNK.search(line)):
            array.chunk_kib = int(m[1])
        if (m := _DISKS.search(line)):
            array.raid_disks, array.active_disks = int(m[1]), int(m[2])
        if (m := _STATUS.search(line)):
            array.status = m[1]
        for count, kind in _COPIES.findall(line):
            if kind == "near":
                array.near_copies = int(count)
            else:
                array.far_copies, array.far_offset = int(count), kind == "offset"
        return True
    if (m := _WAITING.match(line)):
        array.progress = MdstatProgress(action=m["action"], state=m["state"].lower())
        return True
    if (m := _PROGRESS.search(line)):
        array.progress = MdstatProgress(
            action=m["action"], state="running", percent=float(m["pct"]),
            done_kib=int(m["done"]) if m["done"] else None,
            total_kib=int(m["total"]) if m["total"] else None,
            finish_minutes=float(m["finish"]) if m["finish"] else None,
            speed_kib_s=int(m["speed"]) if m["speed"] else None)
        return True
    if line.startswith("bitmap:"):
        array.bitmap = line[len("bitmap:"):].strip()
        return True
    # a bare progress bar (the percentage is on its own line in old kernels)
    return line.startswith("[") and re.fullmatch(r"\[[=>.]*\]", line) is not None


# ----------------------------------------------------------------------------- sysfs
@dataclass
class MdMember:
    """A member of an md array, from /sys/block/mdX/md/dev-Y."""
    name: str                              # the member block device (sda1, fioa ...)
    state: list[str] | Unknown             # dev-Y/state: in_sync, faulty, spare, blocked ...
    # its role in the array, from 0 (dev-Y/slot); None: "none" (a spare or a faulty device)
    slot: int | None | Unknown
    # approximate count of read errors on this device that did not evict it (corrected, or seen
    # while read-only), from dev-Y/errors
    errors: int | Unknown


@dataclass
class MdArray:
    """An md (software RAID) array: the kernel's state from /sys/block/mdX/md, plus mdstat."""
    name: str                              # md0, md127 ...
    level: str | Unknown                   # raid0 raid1 raid5 raid6 raid10 linear ... (md/level)
    # md/array_state: clean, active, active-idle, readonly, read-auto, inactive, suspended ...
    array_state: str | Unknown
    raid_disks: int | Unknown              # devices the array is made of, missing ones included
    # members missing (md/degraded), 0 when whole; None for levels without redundancy (raid0)
    degraded: int | None | Unknown
    # md/sync_action: idle, resync, recover, check, repair, reshape, frozen; None for levels
    # without redundancy
    sync_action: str | None | Unknown
    sync_completed: str | None | Unknown   # md/sync_completed: "a / b" sectors | none | delayed
    sync_done_sectors: int | None = None   # a of sync_completed, 512-byte sectors
    sync_total_sectors: int | None = None  # b of sync_completed, 512-byte sectors
    progress_percent: float | None = None  # sync done in percent (sysfs, else mdstat); None: idle
    # sync rate in KiB/s (mdstat speed=, else md/sync_speed); None when no sync runs
    speed_kib_s: int | None | Unknown = None
    eta_minutes: float | None = None       # minutes left in the running sync (mdstat finish=)
    # sectors the last check/repair found inconsistent (md/mismatch_cnt); on raid1/10 holding
    # swap a few are harmless
    mismatch_cnt: int | None | Unknown = None
    chunk_size_bytes: int | None | Unknown = None  # chunk size in bytes (md/chunk_size)
    metadata_version: str | None | Unknown = None  # superblock format: 1.2, 0.90, external:imsm
    # md/layout: for raid10 near copies | far copies << 8 | offset << 16, for raid5/6 the parity
    # algorithm; None when not read (arrays from /proc/mdstat: its "N near-copies" instead)
    layout: int | None | Unknown = None
    members: list[MdMember] = field(default_factory=list)  # from md/dev-*
    mdstat: MdstatArray | None = None      # this array's /proc/mdstat entry; None if not there
    disagreements: list[str] = field(default_factory=list)   # mdstat vs sysfs
    # where the state comes from: "sysfs" (/sys/block/mdX/md, cross-checked with /proc/mdstat)
    # or "mdstat" (from /proc/mdstat only: the root has no md sysfs for this array, as in a
    # sosreport, a pasted file or a partial capture; sysfs-only fields are then unknown)
    source: Literal["sysfs", "mdstat"] = "sysfs"


# sysfs sync_action word -> mdstat progress word
_ACTION_WORDS = {"recover": "recovery", "resync": "resync", "check": "check", "repair": "repair",
                 "reshape": "reshape"}
_LEVELS_WITHOUT_REDUNDANCY = ("raid0", "linear", "container")


def _opt(value):
    return None if isinstance(value, Unknown) and value.reason == "not present" else value


def read_md(root: HostRoot, name: str, mdstat: Mdstat | Unknown) -> MdArray:
    base = f"sys/block/{name}/md"
    level = root.try_line(f"{base}/level")
    array = MdArray(name=name, level=level, array_state=root.try_line(f"{base}/array_state"),
                    raid_disks=root.try_int(f"{base}/raid_disks"),
                    degraded=_opt(root.try_int(f"{base}/degraded")),
                    sync_action=_opt(root.try_line(f"{base}/sync_action")),
                    sync_completed=_opt(root.try_line(f"{base}/sync_completed")),
                    mismatch_cnt=_opt(root.try_int(f"{base}/mismatch_cnt")),
                    chunk_size_bytes=_opt(root.try_int(f"{base}/chunk_size")),
                    metadata_version=_opt(root.try_line(f"{base}/metadata_version")),
                    layout=_opt(root.try_int(f"{base}/layout")))
    if isinstance(array.sync_completed, str):
        parsed = parse_sync_completed(array.sync_completed)
        if parsed:
            array.sync_done_sectors, array.sync_total_sectors = parsed
            if 0 <= parsed[0] <= parsed[1] and parsed[1] > 0:   # else garbage: mdstat's %
                array.progress_percent = round(100.0 * parsed[0] / parsed[1], 1)
    if array.sync_action not in (None, "idle", "frozen") and known(array.sync_action):
        array.speed_kib_s = _opt(root.try_int(f"{base}/sync_speed"))
    for entry in root.try_listdir(base):
        if entry.startswith("dev-"):
            array.members.append(_read_member(root, f"{base}/{entry}", entry[4:]))
    if isinstance(mdstat, Mdstat):
        array.mdstat = mdstat.arrays.get(name)
        _merge_mdstat(array)
        array.disagreements = cross_check(array, mdstat)
    return array


def _read_member(root: HostRoot, base: str, name: str) -> MdMember:
    state = root.try_line(f"{base}/state")
    slot_text = root.try_line(f"{base}/slot")
    slot: int | None | Unknown
    if isinstance(slot_text, Unknown):
        slot = slot_text
    elif slot_text == "none":
        slot = None
    else:
        try:
            slot = int(slot_text)
        except ValueError:
            slot = Unknown(f"unparsable slot {slot_text[:20]!r}")
    return MdMember(name=name, state=state.split(",") if isinstance(state, str) and state else
                    (state if isinstance(state, Unknown) else []),
                    slot=slot, errors=_opt(root.try_int(f"{base}/errors")))


def parse_sync_completed(text: str) -> tuple[int, int] | None:
    parts = text.split("/")
    if len(parts) != 2:
        return None
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:
        return None


def _merge_mdstat(array: MdArray) -> None:
    """Speed and ETA come from mdstat; so does progress when sysfs has none."""
    progress = array.mdstat.progress if array.mdstat else None
    if progress is None or progress.state != "running":
        return
    array.eta_minutes = progress.finish_minutes
    if progress.speed_kib_s is not None:
        array.speed_kib_s = progress.speed_kib_s
    if array.progress_percent is None:
        array.progress_percent = progress.percent


def cross_check(array: MdArray, mdstat: Mdstat) -> list[str]:
    """Where /proc/mdstat and sysfs tell different stories about the same array."""
    out: list[str] = []
    entry = array.mdstat
    if entry is None:
        if mdstat.arrays or known(array.level):
            out.append(f"{array.name} is in /sys/block but not in /proc/mdstat")
        return out
    if known(array.array_state):
        sys_active = array.array_state not in ("inactive", "clear")
        if sys_active != entry.active:
            out.append(f"array_state {array.array_state} but mdstat says "
                       f"{'active' if entry.active else 'inactive'}")
    if known(array.level) and entry.level and array.level != entry.level:
        out.append(f"level {array.level} in sysfs, {entry.level} in mdstat")
    if known(array.raid_disks) and entry.raid_disks is not None and array.raid_disks != entry.raid_disks:
        out.append(f"raid_disks {array.raid_disks} in sysfs, {entry.raid_disks} in mdstat")
    if known(array.degraded) and array.degraded is not None and entry.raid_disks is not None \
            and entry.active_disks is not None:
        missing = entry.raid_disks - entry.active_disks
        if missing != array.degraded:
            out.append(f"degraded {array.degraded} in sysfs, {missing} missing in mdstat "
                       f"[{entry.raid_disks}/{entry.active_disks}]")
    sys_members = {m.name for m in array.members}
    md_members = {m.name for m in entry.members}
    if array.members and sys_members != md_members:
        only_sys = sorted(sys_members - md_members)
        only_md = sorted(md_members - sys_members)
        out.append("members differ: " + "; ".join(
            part for part in (f"only in sysfs: {', '.join(only_sys)}" if only_sys else "",
                              f"only in mdstat: {', '.join(only_md)}" if only_md else "") if part))
    md_faulty = {m.name for m in entry.members if "faulty" in m.flags}
    sys_faulty = {m.name for m in array.members if isinstance(m.state, list) and "faulty" in m.state}
    if array.members and md_faulty != sys_faulty:
        out.append(f"faulty members: sysfs {sorted(sys_faulty) or 'none'}, "
                   f"mdstat {sorted(md_faulty) or 'none'}")
    if isinstance(array.sync_action, str):
        sys_action = _ACTION_WORDS.get(array.sync_action)
        md_action = entry.progress.action if entry.progress else None
        if entry.progress and entry.progress.state != "running":
            # A waiting sync is always printed "resync=DELAYED/PENDING", whatever its kind.
            md_action = sys_action if sys_action else md_action
        if sys_action != md_action:
            out.append(f"sync_action {array.sync_action} in sysfs, mdstat shows "
                       f"{md_action or 'no sync running'}")
    return out


# ----------------------------------------------------------------------------- mdstat only
# mdstat progress word -> sysfs sync_action word (the kernel prints a repair as "resync")
_SYNC_ACTIONS = {word: action for action, word in _ACTION_WORDS.items()}
_NOT_IN_MDSTAT = "not in /proc/mdstat (no md sysfs for this array in this root)"


def is_container(entry: MdstatArray) -> bool:
    """An IMSM/DDF container ("super external:imsm"): it holds the metadata and its members;
    the kernel runs no personality on it, so it is "inactive" by design. The arrays inside it
    say "super external:/md127/0" and are judged like any other array."""
    return (entry.level in (None, "container") and entry.metadata is not None
            and entry.metadata.startswith("external:") and "/" not in entry.metadata)


def array_from_mdstat(entry: MdstatArray) -> MdArray:
    """An MdArray built from its /proc/mdstat lines alone (source "mdstat"): what mdstat shows
    is filled in, what only sysfs has is Unknown with the reason."""
    missing_reason = Unknown(_NOT_IN_MDSTAT)
    level: str | Unknown = entry.level or ("container" if is_container(entry) else
                                           Unknown("not shown in /proc/mdstat"))
    redundant = isinstance(level, str) and level not in _LEVELS_WITHOUT_REDUNDANCY
    array = MdArray(
        name=entry.name, level=level, array_state=_array_state(entry),
        raid_disks=_raid_disks(entry, level), degraded=_degraded(entry, level),
        sync_action=_sync_action(entry, level), sync_completed=missing_reason,
        mismatch_cnt=missing_reason if redundant else None,
        chunk_size_bytes=(entry.chunk_kib * 1024 if entry.chunk_kib is not None else
                          None if level in ("raid1", "multipath", "container") else
                          Unknown("not shown in /proc/mdstat")),
        metadata_version=_metadata(entry),
        members=[_member_from_mdstat(m, _flagless_in_sync(entry, level)) for m in entry.members],
        mdstat=entry, source="mdstat")
    progress = entry.progress
    if (progress is not None and progress.state == "running"
            and progress.done_kib is not None and progress.total_kib is not None):
        array.sync_done_sectors = progress.done_kib * 2
        array.sync_total_sectors = progress.total_kib * 2
    _merge_mdstat(array)
    return array


def _array_state(entry: MdstatArray) -> str | Unknown:
    if not entry.active:
        return "inactive"
    if entry.broken:
        return "broken"
    if entry.read_only == "read-only":
        return "readonly"
    if entry.read_only == "auto-read-only":
        return "read-auto"
    return Unknown("/proc/mdstat says active: clean or active (writing) is not shown")


def _raid_disks(entry: MdstatArray, level: str | Unknown) -> int | Unknown:
    if entry.raid_disks is not None:
        return entry.raid_disks
    if level in ("raid0", "linear") and entry.active:   # mdstat shows no [n/m] for these
        return sum(1 for m in entry.members if not {"spare", "journal"} & set(m.flags))
    return Unknown("not shown in /proc/mdstat")


def missing_slots(entry: MdstatArray) -> int | None:
    """Devices the array lacks: the _ of [UU_] (one per slot), else N - M of [N/M]; None when
    not shown or not adding up ([0/2], [2/3] without a slot picture)."""
    disks, working, status = entry.raid_disks, entry.active_disks, entry.status
    if disks is None or disks <= 0:
        return None
    if status is not None and len(status) == disks:
        return status.count("_")
    if working is not None and 0 <= working <= disks:
        return disks - working
    return None


def _degraded(entry: MdstatArray, level: str | Unknown) -> int | None | Unknown:
    if level in _LEVELS_WITHOUT_REDUNDANCY:
        return None
    missing = missing_slots(entry)
    return missing if missing is not None else Unknown("not shown in /proc/mdstat")


def _flagless_in_sync(entry: MdstatArray, level: str | Unknown) -> bool:
    """Whether a member without flags is in sync: yes in a running raid0/linear (nothing to
    rebuild) or a redundant array with every slot in sync; otherwise it may be rebuilding."""
    if not entry.active:
        return False
    return level in ("raid0", "linear") or missing_slots(entry) == 0


def _sync_action(entry: MdstatArray, level: str | Unknown) -> str | None | Unknown:
    if entry.progress is not None:
        return _SYNC_ACTIONS.get(entry.progress.action, entry.progress.action)
    if level in _LEVELS_WITHOUT_REDUNDANCY:
        return None
    if entry.active and isinstance(level, str):
        return "idle"   # an active redundant array with no sync line is idle
    return Unknown("not shown in /proc/mdstat")


def _metadata(entry: MdstatArray) -> str | Unknown:
    if entry.metadata is not None:
        return entry.metadata
    if entry.blocks_kib is not None:
        return "0.90"   # the kernel prints "super X.Y" for every format but 0.90
    return Unknown("not shown in /proc/mdstat")


def _member_from_mdstat(member: MdstatMember, flagless_in_sync: bool) -> MdMember:
    flags = list(member.flags)
    state: list[str] | Unknown = flags
    if not {"faulty", "spare", "journal", "replacement"} & set(flags):
        if flagless_in_sync:
            state = ["in_sync", *flags]
        elif not flags:
            state = Unknown("/proc/mdstat does not say whether it is in sync or rebuilding")
    return MdMember(name=member.name, state=state,
                    slot=Unknown("/proc/mdstat shows the device number, not the slot"),
                    errors=Unknown(_NOT_IN_MDSTAT))


def md_type(array: MdArray) -> str:
    return array.level if isinstance(array.level, str) and array.level else "md"


def read_mdstat(root: HostRoot) -> Mdstat | Unknown:
    text = root.try_text("proc/mdstat")
    if isinstance(text, Unknown):
        return text
    return parse_mdstat(text)
