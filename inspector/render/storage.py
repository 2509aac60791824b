"""Rich renderer for the storage section: an lsblk-like tree, then md and dm details, then
drive health (rendered by inspector.render.drives)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.discover.block import BlockDevice
from inspector.discover.md import MDSTAT_FLAGS, MdArray
from inspector.discover.raid_drives import ControllerDrive
from inspector.discover.smart import SmartHealth
from inspector.discover.storage import StorageSection
from inspector.model import Unknown, known
from inspector.render.rows import add_row, label_grid, plain

_UNITS = ("B", "K", "M", "G", "T", "P", "E")


def human_size(value: Any) -> str:
    if not known(value):
        return "?"
    size = float(value)
    for unit in _UNITS:
        if round(size, 1) < 1024 or unit == _UNITS[-1]:
            whole = unit == "B" or size >= 100 or size == int(size)
            return f"{size:.0f}{unit}" if whole else f"{size:.1f}{unit}"
        size /= 1024
    return "?"


def _flag(value: Any) -> str:
    if value is True:
        return "1"
    if value is False:
        return "0"
    return "?"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Unknown):
        return "?"
    return str(value)


def tree_rows(section: StorageSection) -> Iterator[tuple[str, str]]:
    """(prefix, name) rows in lsblk's order and drawing: ├─ └─ │."""
    def visit(name: str, prefix: str, last: bool, depth: int, path: tuple[str, ...]):
        branch = "" if depth == 0 else ("└─" if last else "├─")
        yield prefix + branch, name
        dev = section.devices.get(name)
        if dev is None:
            return
        children = [c for c in dev.children if c not in path]
        child_prefix = prefix if depth == 0 else prefix + ("  " if last else "│ ")
        for i, child in enumerate(children):
            yield from visit(child, child_prefix, i == len(children) - 1, depth + 1, path + (child,))
    for name in section.roots:
        yield from visit(name, "", True, 0, (name,))


def _identity(dev: BlockDevice) -> str:
    parts = [_text(dev.vendor), _text(dev.model)]
    if known(dev.serial) and dev.serial:
        parts.append(f"SN {dev.serial}")
    if known(dev.loop_backing_file) and dev.loop_backing_file:
        parts.append(dev.loop_backing_file)
    return " ".join(p for p in parts if p)


def _mounts(dev: BlockDevice) -> Text:
    text = Text()
    for m in dev.mounts:
        if text:
            text.append("\n")
        text.append(m.mountpoint)
        text.append(f" {m.fstype}{' ro' if m.read_only else ''}", style="dim")
    if dev.swap is not None:
        if text:
            text.append("\n")
        text.append("[SWAP]")
    return text


def _flags(dev: BlockDevice) -> Text:
    text = Text()
    if dev.read_only is True:
        text.append("ro", style="bold red")
    if dev.removable is True:
        text.append(" rm" if text else "rm")
    return text


# queue/rotational says nothing about the medium here: a hypervisor's default (virtio "1", Xen
# "0" on the same SSD-backed host), RAM (zram), an optical drive. --json keeps the flag.
_MEDIUM_UNKNOWN = ("virtio", "xen", "zram", "rom")


def _details(dev: BlockDevice) -> Text:
    """family, medium, scheduler, identity, IO limits: the wrapping column of the table."""
    text = Text()
    if dev.state and known(dev.state) and dev.state != "running":
        text.append(f"{dev.state.upper()} ", style="bold red")
    if dev.parent is None:
        words: list[tuple[str, str]] = []
        if dev.family not in (dev.type, "md", "dm", "loop", "rom", "other"):
            words.append((dev.family, ""))
        if dev.family not in _MEDIUM_UNKNOWN:
            medium = "?" if not isinstance(dev.rotational, bool) else \
                "hdd" if dev.rotational else "ssd"
            words.append((medium, "dim"))
        if dev.scheduler and known(dev.scheduler) and dev.scheduler != "none":
            words.append((dev.scheduler, "dim"))
        for word, style in words:
            text.append(f" {word}" if text else word, style=style)
    identity = _identity(dev)
    if identity:
        text.append(f" {identity}" if text else identity)
    if dev.parent is None and known(dev.queue.optimal_io_size) and dev.queue.optimal_io_size:
        text.append(f" io {human_size(dev.queue.minimum_io_size)}/{human_size(dev.queue.optimal_io_size)}",
                    style="dim")
    return text


_FROM_MDSTAT = "from /proc/mdstat only"


def _row_details(section: StorageSection, name: str, dev: BlockDevice) -> Text:
    array = section.md.get(name)
    if array is not None and array.source == "mdstat" and not known(dev.sysfs_path):
        return Text(_FROM_MDSTAT, style="dim")   # no sysfs: medium, scheduler, limits unknown
    return _details(dev)


def _label(section: StorageSection, name: str) -> str:
    mapped = section.dm.get(name)
    return mapped.dm_name if mapped is not None and known(mapped.dm_name) else name


# Past this many rows a rich Table (which measures every cell) takes seconds: plain lines then.
_TABLE_ROWS_MAX = 300


def _plain_lines(section: StorageSection, rows: list[tuple[str, str]]) -> Text:
    """The device tree as fixed-width lines: a multipath host with thousands of rows."""
    cells = []
    for prefix, name in rows:
        dev = section.devices.get(name)
        if dev is None:
            cells.append((prefix + name, "?", "", "", "", "", ""))
            continue
        mounts = " ".join(f"{m.mountpoint} {m.fstype}" for m in dev.mounts) + (" [SWAP]" if dev.swap else "")
        details = _row_details(section, name, dev).plain
        if name in section.dm:
            details = f"{name} {details}"
        cells.append((prefix + _label(section, name), dev.type, human_size(dev.size_bytes),
                      _text(dev.maj_min), _flags(dev).plain, mounts.strip(), details))
    headers = ("NAME", "TYPE", "SIZE", "MAJ:MIN", "RO", "MOUNTPOINTS", "DETAILS")
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers[:-1])]
    text = Text(no_wrap=True, overflow="ellipsis")
    def line(values, style=""):
        parts = [v.rjust(w) if i == 2 else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths))]
        text.append("  ".join(parts + [values[-1]]).rstrip() + "\n", style=style)
    line(headers, "bold")
    for values in cells:
        line(values)
    text.rstrip()
    return text


def _is_empty_root(section: StorageSection, prefix: str, name: str) -> bool:
    """A top-level device of size 0 with nothing on it (an unbound loop device): lsblk hides
    these unless -a; a table of sixteen idle loops pushes the real disks off the screen."""
    dev = section.devices.get(name)
    return (not prefix and dev is not None and dev.size_bytes == 0 and not dev.children
            and not dev.mounts)


def visible_rows(section: StorageSection) -> tuple[list[tuple[str, str]], int]:
    rows = list(tree_rows(section))
    shown = [(p, n) for p, n in rows if not _is_empty_root(section, p, n)]
    return shown, len(rows) - len(shown)


def _drives_under(section: StorageSection, name: str) -> list[ControllerDrive]:
    view = section.controllers
    return [d for d in view.drives if name in d.volumes] if view is not None else []


def _lone_drives(section: StorageSection) -> dict[str, list[ControllerDrive]]:
    """Drives of a controller that shows no volume, by controller."""
    out: dict[str, list[ControllerDrive]] = {}
    for drive in section.controllers.drives if section.controllers is not None else []:
        if not drive.volumes:
            out.setdefault(drive.controller, []).append(drive)
    return out


def _drive_cells(section: StorageSection, drive: ControllerDrive) -> tuple[str, str, Text]:
    """SIZE, TYPE and DETAILS of a drive row: its address, identity and SMART verdict."""
    health = section.health.get(drive.address)
    details = Text(drive.address, style="dim")
    if drive.cli:
        details.append(f" slot {drive.cli}")
    if isinstance(health, SmartHealth):
        who = " ".join(str(v) for v in (health.model, f"SN {health.serial}") if known(v))
        if who and known(health.model):
            details.append(f" {who}")
        verdict = ("PASSED" if health.smart_passed is True else "FAILED" if health.smart_passed is False
                   else "no verdict")
        details.append(f" SMART {verdict}", style="bold red" if health.smart_passed is False else "")
        return human_size(health.capacity_bytes), "drive", details
    details.append(f" health {health}" if health is not None else " health not read",
                   style="magenta")
    return "?", "drive", details


def _drive_rows(section: StorageSection, prefix: str, name: str) -> list[tuple[str, ControllerDrive]]:
    """(prefix, drive) rows under the row (prefix, name): the drives behind a RAID volume."""
    drives = _drives_under(section, name)
    if not drives:
        return []
    inner = "" if not prefix else prefix[:-2] + ("  " if prefix.endswith("└─") else "│ ")
    more = bool(section.devices[name].children) if name in section.devices else False
    base = inner if prefix else ""
    return [(base + ("└─" if i == len(drives) - 1 and not more else "├─"), d)
            for i, d in enumerate(drives)]


def device_table(section: StorageSection) -> Table | Text:
    rows, _ = visible_rows(section)
    if len(rows) > _TABLE_ROWS_MAX:
        return _plain_lines(section, rows)
    width = max((len(p) + len(_label(section, n)) for p, n in rows), default=4)
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    table.add_column("NAME", no_wrap=True, min_width=min(width, 40))
    table.add_column("TYPE", no_wrap=True)
    table.add_column("SIZE", justify="right", no_wrap=True)
    table.add_column("MAJ:MIN", no_wrap=True)
    table.add_column("RO", no_wrap=True)
    table.add_column("MOUNTPOINTS", no_wrap=True)
    table.add_column("DETAILS", ratio=1)
    for prefix, name in rows:
        dev = section.devices.get(name)
        if dev is None:
            table.add_row(plain(prefix + name), "?")
            continue
        label, details = name, _row_details(section, name, dev)
        mapped = section.dm.get(name)
        if mapped is not None and known(mapped.dm_name):  # lsblk shows /dev/mapper names
            label, details = mapped.dm_name, Text(f"{name} ") + details
        table.add_row(Text(prefix, style="dim") + Text(label, style="bold" if not prefix else ""),
                      dev.type, human_size(dev.size_bytes), _text(dev.maj_min), _flags(dev),
                      _mounts(dev), details)
        for drive_prefix, drive in _drive_rows(section, prefix, name):
            size, kind, drive_details = _drive_cells(section, drive)
            table.add_row(Text(drive_prefix, style="dim") + Text(drive.address.rsplit(" ", 1)[-1]),
                          kind, size, "", "", Text(), drive_details)
    for controller, drives in _lone_drives(section).items():
        driver = next((str(d.driver) for d in drives if known(d.driver)), "?")
        table.add_row(Text(controller, style="bold"), "raid", "", "", "", Text(),
                      Text(f"{driver}: no volume shown", style="dim"))
        for i, drive in enumerate(drives):
            size, kind, drive_details = _drive_cells(section, drive)
            table.add_row(Text("└─" if i == len(drives) - 1 else "├─", style="dim")
                          + Text(drive.address.rsplit(" ", 1)[-1]), kind, size, "", "", Text(),
                          drive_details)
    return table


def md_block(section: StorageSection) -> Text:
    """One paragraph per array: wraps cleanly in an 80-column SSH window, unlike a wide table."""
    text = Text()
    text.append("md arrays", style="bold underline")
    for array in section.md.values():
        text.append(f"\n{array.name} ", style="bold")
        text.append(f"{_text(array.level)} ")
        text.append_text(_state_text(array))
        text.append(f"  disks {_disks(array)}")
        sync = _sync(array)
        if sync.plain:
            text.append("  ")
            text.append_text(sync)
        if known(array.mismatch_cnt) and array.mismatch_cnt is not None:
            text.append(f"  mismatch_cnt {array.mismatch_cnt}",
                        style="yellow" if array.mismatch_cnt else "")
        if known(array.chunk_size_bytes) and array.chunk_size_bytes:
            text.append(f"  chunk {human_size(array.chunk_size_bytes)}")
        text.append(f"  metadata {_text(array.metadata_version) or '?'}")
        if array.source == "mdstat":
            text.append(f"  ({_FROM_MDSTAT})", style="dim")
        text.append("\n  members: ")
        members = _members(array)
        if members.plain:
            text.append_text(members)
        else:   # an array with no dev-* entry: say so rather than print nothing
            text.append("? (no dev-* entries under md/ in sysfs; mdadm --detail lists them)",
                        style="yellow")
        for line in array.disagreements:
            text.append(f"\n  mdstat/sysfs disagree: {line}", style="yellow")
    return text


def _state_text(array: MdArray) -> Text:
    if array.source == "mdstat" and array.mdstat is not None:
        return _mdstat_state_text(array)
    state = _text(array.array_state)
    bad = state in ("inactive", "clear") or (known(array.degraded) and array.degraded)
    text = Text(state, style="bold red" if bad else "")
    if known(array.degraded) and array.degraded:
        text.append(" DEGRADED", style="bold red")
    return text


def _mdstat_state_text(array: MdArray) -> Text:
    """mdstat's own words: it does not tell clean from active, as sysfs's array_state does."""
    entry = array.mdstat
    assert entry is not None     # shown for arrays read from /proc/mdstat only
    if not entry.active:
        container = array.level == "container"   # inactive by design
        return Text("inactive" + (" (container)" if container else ""),
                    style="" if container else "bold red")
    text = Text("broken", style="bold red") if entry.broken else Text("active")
    if entry.read_only:
        text.append(f" ({entry.read_only})", style="yellow" if entry.read_only == "read-only" else "")
    if known(array.degraded) and array.degraded:
        text.append(" DEGRADED", style="bold red")
    return text


def _disks(array: MdArray) -> str:
    text = _text(array.raid_disks)
    if array.mdstat and array.mdstat.status:
        text += f" [{array.mdstat.status}]"
    return text


def _sync(array: MdArray) -> Text:
    action = _text(array.sync_action)
    if action in ("", "idle") or (action == "?" and array.source == "mdstat"):
        return Text("" if action == "?" else action)   # mdstat shows no sync line: none runs
    parts = [action]
    progress = array.mdstat.progress if array.mdstat else None
    if array.sync_completed == "delayed":
        parts.append("(delayed)")
    elif array.source == "mdstat" and progress is not None and progress.state != "running":
        parts.append(f"({progress.state})")
    if array.progress_percent is not None:
        parts.append(f"{array.progress_percent:.1f}%")
    if known(array.speed_kib_s) and array.speed_kib_s:
        parts.append(f"{array.speed_kib_s / 1024:.1f} MiB/s")
    if array.eta_minutes is not None:
        parts.append(f"ETA {array.eta_minutes:.1f} min")
    return Text(" ".join(parts), style="yellow")


def _members(array: MdArray) -> Text:
    if array.source == "mdstat" and array.mdstat is not None:
        return _mdstat_members(array.mdstat.members)
    text = Text()
    for m in sorted(array.members, key=lambda m: (m.slot if isinstance(m.slot, int) else 1 << 30, m.name)):
        if text:
            text.append(", ")
        state = ",".join(m.state) if isinstance(m.state, list) else "?"
        slot = m.slot if isinstance(m.slot, int) else "-"
        style = "bold red" if "faulty" in state else ("yellow" if "in_sync" not in state else "")
        text.append(f"{m.name}[{slot}] {state}", style=style)
    return text


_FLAG_MARKS = {word: letter for letter, word in MDSTAT_FLAGS.items()}


def _mdstat_members(members) -> Text:
    """As mdstat lists them: name[device number] and (F)(S)(W)(J)(R) flags."""
    text = Text()
    for m in members:
        if text:
            text.append(", ")
        flags = "".join(f"({_FLAG_MARKS.get(f, f)})" for f in m.flags)
        style = "bold red" if "faulty" in m.flags else ("yellow" if "spare" in m.flags else "")
        text.append(f"{m.name}[{m.number}]{flags}", style=style)
    return text


def dm_block(section: StorageSection) -> Text:
    text = Text()
    text.append("device-mapper", style="bold underline")
    for device in section.dm.values():
        text.append(f"\n{device.name} ", style="bold")
        text.append(f"{_text(device.dm_name)}  {device.kind}")
        if device.detail:
            text.append(f" ({device.detail})")
        if device.suspended is True:
            text.append("  SUSPENDED", style="bold red")
        elif not known(device.suspended):
            text.append(f"  suspended {device.suspended}", style="yellow")
        text.append(f"  on {', '.join(device.slaves) or '-'}")
        lower = section.devices.get(device.name)
        if lower is not None and lower.slaves_source:   # no sysfs slaves/: say who told
            text.append(f" (from {lower.slaves_source})", style="dim")
        if device.striping:
            text.append(f"  striped {device.striping.stripes} x {human_size(device.striping.stripe_bytes)}")
        text.append(f"\n  uuid {_text(device.uuid)}", style="dim")
    return text


def render(section: StorageSection) -> RenderableType:
    parts: list[RenderableType] = [device_table(section)]
    _, hidden = visible_rows(section)
    if hidden:
        parts.append(Text(f"{hidden} empty device{'s' if hidden != 1 else ''} (size 0, e.g. "
                          f"unbound loop) not shown; see --json", style="dim"))
    if section.md:
        parts.append(md_block(section))
    if section.dm:
        # Thousands of multipath maps would drown the report; past 200 only the count.
        parts.append(dm_block(section) if len(section.dm) <= 200 else
                     Text(f"{len(section.dm)} device-mapper devices (see --json)"))
    if isinstance(section.mdstat, Unknown) and section.md:
        parts.append(Text(f"/proc/mdstat: {section.mdstat}", style="yellow"))
    files = [s for s in section.swaps if not s.filename.startswith("/dev/")]
    for swap in files:
        size = human_size(swap.size_kib * 1024) if known(swap.size_kib) else "?"
        parts.append(Text(f"swap file {swap.filename}: {size}"))
    if section.health:
        from inspector.render.drives import render_health
        grid = label_grid(gap=1)
        parts.append(grid)
        unknown = {n: h for n, h in section.health.items() if isinstance(h, Unknown)}
        if len(unknown) > 10:  # thousands of paths without SMART: one line, not thousands
            first = next(iter(unknown))
            add_row(grid, f"{len(unknown)} devices", Text(f"health unknown, e.g. {first}: "
                                                          f"{unknown[first]}", style="magenta"))
        for name, health in section.health.items():
            if len(unknown) > 10 and name in unknown:
                continue
            try:
                add_row(grid, name, render_health(health))
            except Exception as exc:  # another module's renderer must not hide the tree
                add_row(grid, name, Text(f"cannot render health: {type(exc).__name__}: {exc}",
                                         style="red"))
    for problem in section.problems:
        parts.append(Text(f"unknown: {problem}", style="yellow"))
    return Group(*parts)
