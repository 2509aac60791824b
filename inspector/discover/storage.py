"""The storage section: block devices and their tree, md arrays, dm devices, drive health.

`collect(root)` never raises: each part that fails becomes Unknown(reason) or a line in
`problems`, and the rest of the section is still reported.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from inspector.discover import block, dm, md
from inspector.host import HostRoot
from inspector.model import Unknown


@dataclass
class StorageSection:
    """Block devices and their tree, md arrays, dm devices, swap and drive health."""
    devices: dict[str, block.BlockDevice] = field(default_factory=dict)  # /sys/block + partitions
    roots: list[str] = field(default_factory=list)         # tree roots: devices without slaves
    md: dict[str, md.MdArray] = field(default_factory=dict)   # md arrays by name (sysfs + mdstat)
    # /proc/mdstat parsed; None when the host has neither md arrays nor /proc/mdstat
    mdstat: md.Mdstat | Unknown | None = None
    dm: dict[str, dm.DmDevice] = field(default_factory=dict)  # device-mapper devices by dm-N
    swaps: list[block.Swap] = field(default_factory=list)     # every line of /proc/swaps
    # drive health by device name (drives.collect()): a hio, fio, nvme or smart object, or
    # unknown (no tool, virtual disk ...); devices without a health notion are left out
    health: dict[str, Any] = field(default_factory=dict)
    # what could not be read or does not add up ("md1 is in /proc/mdstat but not in /sys/block")
    problems: list[str] = field(default_factory=list)

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
    for name in md_names:
        array = _guard(section, name, lambda name=name: md.read_md(root, name, section.mdstat))
        if isinstance(array, md.MdArray):
            section.md[name] = array
            section.devices[name].type = md.md_type(array)
    if isinstance(section.mdstat, md.Mdstat):
        for name in section.mdstat.arrays:
            if name not in section.devices:
                section.problems.append(f"{name} is in /proc/mdstat but not in /sys/block")
        section.problems.extend(f"/proc/mdstat {p}" for p in section.mdstat.problems)

    mapper_names: dict[str, str] = {}
    for name, dev in inventory.devices.items():
        if dev.family != "dm" or dev.parent is not None:
            continue
        device = _guard(section, name, lambda name=name, dev=dev: dm.read_dm(root, name, dev.slaves, dev.queue))
        if isinstance(device, dm.DmDevice):
            section.dm[name] = device
            dev.type = device.kind
            if isinstance(device.dm_name, str):
                mapper_names[device.dm_name] = name
    block.attach_mapper_names(inventory, mapper_names)

    whole = [n for n, d in section.devices.items() if d.parent is None]
    section.health = _drive_health(root, whole, section.problems)
    return section


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
