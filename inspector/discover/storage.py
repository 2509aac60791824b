"""The storage section: block devices and their tree, md arrays, dm devices, drive health.

`collect(root)` never raises: each part that fails becomes Unknown(reason) or a line in
`problems`, and the rest of the section is still reported.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from inspector.discover import block, dm, md, raid_drives
from inspector.discover.drive_cmd import COMMAND_TIMEOUT
from inspector.discover.md import Mdstat  # the `md` field below hides the module in the class
from inspector.model import Unknown
from inspector.roots.host import HostRoot


@dataclass
class StorageSection:
    """Block devices and their tree, md arrays, dm devices, swap and drive health."""
    # /sys/block and partitions; plus md arrays seen only in /proc/mdstat (md[name].source
    # "mdstat"), whose sysfs fields are unknown
    devices: dict[str, block.BlockDevice] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)         # tree roots: devices without slaves
    md: dict[str, md.MdArray] = field(default_factory=dict)   # md arrays by name (sysfs + mdstat)
    # /proc/mdstat parsed; None when the host has neither md arrays nor /proc/mdstat
    mdstat: Mdstat | Unknown | None = None
    dm: dict[str, dm.DmDevice] = field(default_factory=dict)  # device-mapper devices by dm-N
    swaps: list[block.Swap] = field(default_factory=list)     # every line of /proc/swaps
    # drive health by device name (drives.collect()): a hio, fio, nvme or smart object, or
    # unknown (no tool, virtual disk ...); devices without a health notion are left out
    health: dict[str, Any] = field(default_factory=dict)
    # what could not be read or does not add up ("md1 is in /proc/mdstat but not in /sys/block")
    problems: list[str] = field(default_factory=list)
    # drives behind hardware RAID controllers (smartctl --scan-open); their health is in
    # `health` under their address ("/dev/bus/0 -d megaraid,3"); None: no controller shows
    controllers: raid_drives.ControllerView | None = None

    def walk(self) -> Iterator[tuple[int, str]]:
        """(depth, name) in lsblk order: a device under each of its parents, as lsblk shows it."""
        def visit(name: str, depth: int, path: tuple[str, ...]) -> Iterator[tuple[int, str]]:
            yield depth, name
            dev = self.devices.get(name)
            if dev is None:
                return
            for child in dev.children:
                if child not in path:  # a cycle in a corrupt tree must not loop forever
                    yield from visit(child, depth + 1, path + (child,))
        for name in self.roots:
            yield from visit(name, 0, (name,))


def collect(root: HostRoot) -> StorageSection:
    section = StorageSection()
    try:
        inventory = block.collect_block(root)
    except Exception as exc:  # a collector bug must not hide md/dm or drive health
        section.problems.append(f"block devices: {type(exc).__name__}: {exc}")
        inventory = block.BlockInventory({}, [], [], [])
    section.devices, section.roots, section.swaps = inventory.devices, inventory.roots, inventory.swaps
    section.problems.extend(inventory.problems)

    md_names = [n for n, d in inventory.devices.items() if d.family == "md" and d.parent is None]
    if md_names or root.exists("proc/mdstat"):
        section.mdstat = _guard(section, "mdstat", lambda: md.read_mdstat(root))
    in_mdstat = section.mdstat.arrays if isinstance(section.mdstat, md.Mdstat) else {}
    for name in md_names:
        if name in in_mdstat and not root.exists(f"sys/block/{name}/md"):
            # the block device is there but not its md directory: mdstat is all there is
            array = _guard(section, name, lambda name=name: md.array_from_mdstat(in_mdstat[name]))
        else:
            mdstat = section.mdstat if section.mdstat is not None else Unknown("no /proc/mdstat")
            array = _guard(section, name,
                           lambda name=name, mdstat=mdstat: md.read_md(root, name, mdstat))
        if isinstance(array, md.MdArray):
            section.md[name] = array
            section.devices[name].type = md.md_type(array)
    mdstat_only = []
    for name, entry in in_mdstat.items():
        if name in section.devices:
            continue
        array = _guard(section, name, lambda entry=entry: md.array_from_mdstat(entry))
        if isinstance(array, md.MdArray):
            section.md[name] = array
            mdstat_only.append(array)
        if inventory.devices or not any(p.startswith("/sys/block:") for p in section.problems):
            section.problems.append(f"{name} is in /proc/mdstat but not in /sys/block: "
                                    "judged from /proc/mdstat alone")
    if isinstance(section.mdstat, md.Mdstat):
        section.problems.extend(f"/proc/mdstat {p}" for p in section.mdstat.problems)

    mapper_names: dict[str, str] = {}
    for name, dev in inventory.devices.items():
        if dev.family != "dm" or dev.parent is not None:
            continue
        device = _guard(section, name,
                        lambda name=name, dev=dev: dm.read_dm(root, name, dev.slaves, dev.queue))
        if isinstance(device, dm.DmDevice):
            section.dm[name] = device
            dev.type = device.kind
            if isinstance(device.dm_name, str):
                mapper_names[device.dm_name] = name
    block.attach_mapper_names(inventory, mapper_names)

    whole = [n for n, d in section.devices.items() if d.parent is None]
    section.health = _drive_health(root, whole, section.problems)
    view = _guard(section, "drives behind RAID controllers",
                  lambda: raid_drives.collect(root, section.devices, section.health, COMMAND_TIMEOUT))
    section.controllers = view if isinstance(view, raid_drives.ControllerView) else None
    if mdstat_only:   # after drive health: these have no drive to ask
        _guard(section, "md arrays from /proc/mdstat",
               lambda: _add_mdstat_devices(root, section, mdstat_only))
    return section


def _add_mdstat_devices(root: HostRoot, section: StorageSection, arrays: list[md.MdArray]) -> None:
    """Tree rows for arrays only /proc/mdstat shows: under their members when those are known
    block devices (as lsblk draws an array), else at the top of the tree."""
    mounts = _mounts_by_source(root)
    for array in arrays:
        entry = array.mdstat
        if entry is None:
            continue
        from_mdstat = Unknown("from /proc/mdstat only: no /sys/block entry")
        dev = block.BlockDevice(
            name=array.name, type=md.md_type(array), family="md", maj_min=from_mdstat,
            sysfs_path=from_mdstat,
            # an inactive array's "blocks" add up its members; the array itself has no size
            size_bytes=(entry.blocks_kib * 1024 if entry.active and entry.blocks_kib is not None
                        else Unknown("inactive: no array size") if not entry.active else from_mdstat),
            read_only=entry.read_only == "read-only", removable=False, rotational=from_mdstat,
            scheduler=None, schedulers=[],
            queue=block.QueueLimits(from_mdstat, from_mdstat, from_mdstat, from_mdstat),
            slaves=[m.name for m in entry.members], mounts=list(mounts.get(array.name, [])))
        dev.swap = next((s for s in section.swaps if s.filename == f"/dev/{array.name}"), None)
        section.devices[array.name] = dev
        parents = [m for m in dev.slaves if m in section.devices and m != array.name]
        for parent in parents:
            lower = section.devices[parent]
            lower.holders.append(array.name)
            lower.children.append(array.name)
        if not parents:
            section.roots.append(array.name)


def _mounts_by_source(root: HostRoot) -> dict[str, list[block.Mount]]:
    text = root.try_text("proc/self/mountinfo")
    if isinstance(text, Unknown):
        return {}
    out: dict[str, list[block.Mount]] = {}
    for _, mount in block.parse_mountinfo(text):
        if mount.source.startswith("/dev/"):
            out.setdefault(mount.source[5:], []).append(mount)
    return out


def _guard(section: StorageSection, what: str, func):
    try:
        return func()
    except Exception as exc:
        section.problems.append(f"{what}: {type(exc).__name__}: {exc}")
        return Unknown(f"{type(exc).__name__}: {exc}")


def _drive_health(root: HostRoot, names: list[str], problems: list[str]) -> dict[str, Any]:
    """Drive and flash-card health (another module's job); its failure never breaks storage."""
    try:
        from inspector.discover import drives
        result = drives.collect(root, names)
    except Exception as exc:
        problems.append(f"drive health: {type(exc).__name__}: {exc}")
        return {}
    return dict(result) if isinstance(result, dict) else {}
