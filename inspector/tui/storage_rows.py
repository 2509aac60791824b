"""The Storage screen's model: lsblk-like rows with a health shorthand, and a device's detail
(findings first, then only the fields that have values, grouped). Rich only, no Textual.

Rows follow `lsblk`: the tree of inspector.render.storage (a device under each of its
parents), empty devices (size 0, unbound loops) hidden as `report` hides them, then md arrays
known only from /proc/mdstat (no sysfs for them in this root) with their members under them,
then drives and flash controllers that have health but no block device (a failed fct1).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from inspector.model import Finding, Level, Unknown, known
from inspector.tui.modelview import findings_block, findings_for, get, worst_level
from inspector.widgets import units

LEVEL_WORD = {Level.OK: ("ok", "green"), Level.WARN: ("WARN", "bold yellow"),
              Level.CRIT: ("CRIT", "bold red"), Level.UNKNOWN: ("?", "magenta")}


@dataclass
class DeviceRow:
    key: str            # unique row key (a device can sit under two parents, as in lsblk)
    name: str           # kernel name: live figures, findings and the IO probe use it
    label: str          # tree prefix + shown name (mapper name for dm)
    type: str
    size: str
    mount: str
    health: Text
    item: Any           # BlockDevice, MdArray (mdstat only) or a health record (detached)
    origin: str = "device"   # device | mdstat | member | detached


def storage_rows(section: Any, findings: list[Finding], show_empty: bool = False
                 ) -> tuple[list[DeviceRow], int]:
    """(rows, how many empty devices were hidden)."""
    from inspector.render.storage import tree_rows, visible_rows
    devices = get(section, "devices", default={}) or {}
    dm = get(section, "dm", default={}) or {}
    rows: list[DeviceRow] = []
    if show_empty:
        tree, hidden = list(tree_rows(section)), 0
    else:
        tree, hidden = visible_rows(section)
    for i, (prefix, name) in enumerate(tree):
        dev = devices.get(name)
        mapped = dm.get(name)
        shown = mapped.dm_name if mapped is not None and known(get(mapped, "dm_name")) else name
        if dev is None:
            rows.append(DeviceRow(f"{i}:{name}", name, prefix + shown, "?", "", "",
                                  Text("?", style="magenta"), None))
            continue
        rows.append(DeviceRow(f"{i}:{name}", name, prefix + shown, str(dev.type),
                              units.size(dev.size_bytes) if known(dev.size_bytes) else "?",
                              mount_of(dev), health_cell(section, name, findings), dev))
    md = get(section, "md", default={}) or {}
    for name, array in md.items():
        if name in devices:
            continue
        level = get(array, "level")
        rows.append(DeviceRow(f"md:{name}", name, name, str(level) if known(level) else "md",
                              "", "", health_cell(section, name, findings), array, "mdstat"))
        members = get(array, "members", default=[]) or []
        for j, member in enumerate(members):
            branch = "└─" if j == len(members) - 1 else "├─"
            mname = get(member, "name", default="?")
            state = get(member, "state")
            words = ",".join(state) if isinstance(state, list) else "?"
            rows.append(DeviceRow(f"md:{name}:{mname}", mname, branch + mname, "member", "", "",
                                  Text(words, style="bold red" if "faulty" in words else "grey62"),
                                  member, "member"))
    health = get(section, "health", default={}) or {}
    for name, record in health.items():
        if name in devices:
            continue
        cell = health_cell(section, name, findings)
        cell.append(f" {detached_state(record, short=True)}, no block device", style="grey62")
        rows.append(DeviceRow(f"health:{name}", name, name, "no dev", "", "", cell, record,
                              "detached"))
    return rows, hidden


def mount_of(dev: Any) -> str:
    mounts = get(dev, "mounts", default=[]) or []
    if mounts:
        first = mounts[0].mountpoint
        return first + (f" +{len(mounts) - 1}" if len(mounts) > 1 else "")
    return "[SWAP]" if get(dev, "swap") is not None else ""


# ----------------------------------------------------------------------------- health
def _num(value: Any, fmt: str = "{:g}") -> str | None:
    return fmt.format(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def health_shorthand(record: Any) -> str:
    """The two or three figures that say how a drive or flash card is doing."""
    from inspector.discover.fio_status import FioHealth
    from inspector.discover.hio import HioHealth
    from inspector.discover.nvme_health import NvmeHealth
    from inspector.discover.smart import SmartHealth
    parts: list[str | None] = []
    if isinstance(record, HioHealth):
        rate = _num(record.max_bad_block_rate_pct)
        trend = get(record, "bad_block_trend", default="")
        parts = [f"badblk {rate}%{'↑' if trend == 'rising' else ''}" if rate else None,
                 f"err {record.rw_error}" if _num(record.rw_error) and record.rw_error else None,
                 f"batt {record.battery_status}" if known(record.battery_status)
                 and record.battery_status != "OK" else None]
    elif isinstance(record, FioHealth):
        parts = [f"reserves {_num(record.reserves_pct)}%" if _num(record.reserves_pct) else None,
                 "READ-ONLY" if record.read_only else None]
    elif isinstance(record, NvmeHealth):
        parts = [f"spare {_num(record.available_spare_pct)}%" if _num(record.available_spare_pct) else None,
                 f"used {_num(record.percent_used)}%" if _num(record.percent_used) else None]
    elif isinstance(record, SmartHealth):
        parts = [None if not isinstance(record.smart_passed, bool) else
                 "SMART ok" if record.smart_passed else "SMART FAILED"]
    temp = _num(get(record, "temperature_c"))
    if temp is not None:
        parts.append(f"{temp}°C")
    return " ".join(p for p in parts if p)


def health_cell(section: Any, name: str, findings: list[Finding]) -> Text:
    """Level plus shorthand: "ok reserves 92% 41°C", "CRIT badblk 0.8%↑", "WARN degraded"."""
    own = findings_for(findings, name)
    level = worst_level(own)
    record = (get(section, "health", default={}) or {}).get(name)
    text = Text(no_wrap=True, overflow="ellipsis")
    if record is not None and isinstance(record, Unknown):
        if level is None:
            text.append("-", style="grey50")
            return text
    elif record is not None:
        from inspector.health.drives import worst_level as drive_level
        try:
            drive = drive_level(name, record)
        except Exception:
            drive = Level.UNKNOWN
        level = drive if level is None else max(level, drive, key=_rank)
    md = (get(section, "md", default={}) or {}).get(name)
    if level is None and md is None:
        return text
    word, style = LEVEL_WORD[level if level is not None else Level.OK]
    text.append(word, style=style)
    if record is not None and not isinstance(record, Unknown):
        short = health_shorthand(record)
        if short:
            text.append(f" {short}")
    if md is not None:
        text.append(f" {md_shorthand(md)}")
    elif own and level != Level.OK and record is None:
        text.append(f" {own[0].message}", style="grey70")
    return text


def _rank(level: Level) -> int:
    return {Level.OK: 0, Level.UNKNOWN: 1, Level.WARN: 2, Level.CRIT: 3}[level]


def md_shorthand(array: Any) -> str:
    """What matters first in a narrow cell: degraded, the sync and its progress, then a state
    other than the usual clean/active."""
    parts = []
    degraded = get(array, "degraded")
    if degraded is True or (isinstance(degraded, int) and not isinstance(degraded, bool)
                            and degraded > 0):
        parts.append("degraded")
    action = get(array, "sync_action")
    if known(action) and action and action != "idle":
        progress = get(array, "progress_percent")
        parts.append(f"{action} {progress:.0f}%" if isinstance(progress, (int, float)) else str(action))
    state = get(array, "array_state")
    if not known(state):
        parts.append("state ?")
    elif state not in ("clean", "active", "active-idle"):
        parts.append(str(state))
    return " ".join(parts) or str(state)


# ----------------------------------------------------------------------------- detail
def has_value(value: Any) -> bool:
    return value is not None and not isinstance(value, Unknown) and value != "" and \
        value != [] and value != {}


def _pairs(pairs: list[tuple[str, Any]]) -> Text:
    text = Text()
    for label, value in pairs:
        if not has_value(value):
            continue
        if text:
            text.append("  ")
        text.append(f"{label} ", style="grey62")
        text.append(value if isinstance(value, Text) else Text(_show(value)))
    return text


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def device_groups(dev: Any) -> list[tuple[str, Text]]:
    """(group, "label value  label value") for a BlockDevice, only the fields with values."""
    queue = get(dev, "queue")
    size = get(dev, "size_bytes")
    groups = [
        ("identity", _pairs([("type", dev.type), ("family", dev.family),
                             ("size", f"{units.size(size)} ({size} B)" if isinstance(size, int) else None),
                             ("vendor", dev.vendor), ("model", dev.model), ("serial", dev.serial),
                             ("wwn", dev.wwn), ("maj:min", dev.maj_min), ("state", dev.state)])),
        ("queue", _pairs([("scheduler", dev.scheduler),
                          ("offers", " ".join(dev.schedulers) if dev.schedulers else None),
                          ("rotational", dev.rotational),
                          ("logical block", _bytes(get(queue, "logical_block_size"))),
                          ("physical block", _bytes(get(queue, "physical_block_size"))),
                          ("min io", _bytes(get(queue, "minimum_io_size"))),
                          ("optimal io", _bytes(get(queue, "optimal_io_size"))
                           if get(queue, "optimal_io_size") else None),
                          ("read-only", True if dev.read_only is True else None),
                          ("removable", True if dev.removable is True else None)])),
        ("topology", _pairs([("parent", dev.parent), ("partition", dev.partition_number),
                             ("start sector", dev.start_sector), ("partitions", dev.partitions),
                             ("on", dev.slaves), ("holders", dev.holders),
                             ("mounted", ", ".join(
                                 f"{m.mountpoint} ({m.fstype}{', ro' if m.read_only else ''})"
                                 for m in dev.mounts) or None),
                             ("swap", _swap(dev.swap)), ("backing file", dev.loop_backing_file)])),
    ]
    return [(name, text) for name, text in groups if text]


def _bytes(value: Any) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return f"{value}" if value < 1024 else units.size(value)


def _swap(swap: Any) -> str | None:
    if swap is None:
        return None
    used, size = get(swap, "used_kib"), get(swap, "size_kib")
    if isinstance(used, int) and isinstance(size, int):
        return f"{units.size(used * 1024)} of {units.size(size * 1024)} used"
    return "active"


def md_groups(array: Any) -> list[tuple[str, Text]]:
    from inspector.render.storage import _members, _sync
    members = _members(array)
    return [(name, text) for name, text in [
        ("md", _pairs([("level", get(array, "level")), ("state", get(array, "array_state")),
                       ("degraded", get(array, "degraded") or None),
                       ("disks", get(array, "raid_disks")),
                       ("metadata", get(array, "metadata_version")),
                       ("from", "/proc/mdstat only" if get(array, "source") == "mdstat" else None)])),
        ("sync", _sync(array) if _sync(array).plain not in ("", "idle") else Text()),
        ("members", members),
        ("mdstat", Text("; ".join(get(array, "disagreements", default=[]) or []), style="yellow")),
    ] if text]


def dm_groups(device: Any) -> list[tuple[str, Text]]:
    striping = get(device, "striping")
    return [(name, text) for name, text in [
        ("dm", _pairs([("name", get(device, "dm_name")), ("target", get(device, "kind")),
                       ("detail", get(device, "detail")),
                       ("SUSPENDED", True if get(device, "suspended") is True else None),
                       ("on", get(device, "slaves")), ("uuid", get(device, "uuid")),
                       ("striped", f"{striping.stripes} x {units.size(striping.stripe_bytes)}"
                        if striping else None)])),
    ] if text]


def grouped(groups: list[tuple[str, RenderableType]]) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold cyan", no_wrap=True, min_width=9)
    grid.add_column()
    for name, text in groups:
        grid.add_row(name, text)
    return grid


def device_detail(section: Any, row: DeviceRow, findings: list[Finding]) -> list[RenderableType]:
    """Findings with evidence and advice first, then the grouped fields, then drive health."""
    name = row.name
    head = Text(row.label.lstrip("├└│─ "), style="bold cyan")
    if row.name != head.plain:
        head.append(f" ({row.name})", style="cyan")
    head.append(f"  {row.type}", style="bold")
    if row.size:
        head.append(f" {row.size}")
    if row.mount:
        head.append(f" {row.mount}")
    parts: list[RenderableType] = [head]
    parts.append(findings_block(findings, name, "device"))
    groups: list[tuple[str, RenderableType]] = []
    if row.origin == "device" and row.item is not None:
        groups += device_groups(row.item)
    md = (get(section, "md", default={}) or {}).get(name)
    if md is not None and row.origin in ("device", "mdstat"):
        groups += md_groups(md)
    dm = (get(section, "dm", default={}) or {}).get(name)
    if dm is not None:
        groups += dm_groups(dm)
    if row.origin == "member":
        groups.append(("member", _pairs([("state", get(row.item, "state")),
                                         ("slot", get(row.item, "slot"))])))
    if row.origin == "detached":
        parts.append(Text(f"no block device: {detached_state(row.item)} (controller without a "
                          "block device: failed, offline or detached)", style="yellow"))
    health = (get(section, "health", default={}) or {}).get(name)
    if health is not None:
        try:
            from inspector.render.drives import render_health
            groups.append(("health", render_health(health)))
        except Exception as exc:   # another module's renderer must not hide the rest
            groups.append(("health", Text(f"cannot render: {type(exc).__name__}: {exc}",
                                          style="red")))
    if groups:
        parts.append(grouped(groups))
    return parts


def detached_state(record: Any, short: bool = False) -> str:
    """The controller's own state words: "failed" (short) or fio-status's "Failed: DEVICE IS
    OFFLINE ..." line."""
    for name in (("state", "health") if short else ("status_line", "state", "health")):
        value = get(record, name)
        if isinstance(value, str) and value and known(value):
            return value if len(value) <= 60 else value[:59] + "…"
    if isinstance(record, Unknown):
        return str(record)
    return "no block device"
