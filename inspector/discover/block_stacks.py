"""The devices a stacked device is built on, when the root lacks its sysfs `slaves/`.

A sosreport keeps /sys/block/dm-N/queue but not dm-N/slaves (nor dev, nor dm/); what describes
the stack is spread over what it did keep: the lower devices' `holders/` (bcache's are often
there), `dmsetup ls --tree`, `dmsetup table` and `lsblk`. Every one of them is read; a device's
slaves are what they say, and `slaves_source` names each source that said it. Where sources
disagree the union is kept and the disagreement is a problem line. Device numbers are matched to
kernel names through the devices' own `dev`, /proc/partitions, `lsblk`'s MAJ:MIN column and
`dmsetup info -c` (a mapped name's minor is its dm-N).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.discover.dmsetup_text import (
    TreeRow,
    dmsetup_table_lower,
    dmsetup_tree_edges,
    lsblk_edges,
    parse_info_columns,
    parse_lsblk_rows,
)
from inspector.model import Unknown
from inspector.roots.host import HostRoot

if TYPE_CHECKING:   # block imports this module: its device type for hints only
    from inspector.discover.block import BlockDevice

STACKED = ("dm", "md", "other")   # families that may be built on other devices


def _base(dev: BlockDevice) -> str:
    return dev.sysfs_path if isinstance(dev.sysfs_path, str) else f"sys/block/{dev.name}"


def complete_stacks(root: HostRoot, devices: dict[str, BlockDevice], problems: list[str]) -> None:
    """Fill `slaves` (and `slaves_source`) of whole devices whose slaves/ the root lacks."""
    lacking = [d for d in devices.values() if d.parent is None and d.family in STACKED
               and not root.exists(f"{_base(d)}/slaves")]
    if not lacking:
        return
    names = _Names(root, devices)
    found: dict[str, dict[str, list[str]]] = {d.name: {} for d in lacking}   # name -> source -> slaves

    def add(upper: str | None, lower: str | None, source: str) -> None:
        if upper in found and lower and lower != upper and lower in devices:
            said = found[upper].setdefault(source, [])
            if lower not in said:
                said.append(lower)

    for dev in devices.values():      # holders/ of the lower devices: sysfs itself
        for holder in root.try_listdir(f"{_base(dev)}/holders"):
            add(holder, dev.name, f"holders/ of {dev.name}")
    tree = _output(root, ["dmsetup", "ls", "--tree"])
    if tree is not None:
        for upper, lower in dmsetup_tree_edges(tree):
            add(names.of_row(upper), names.of_row(lower), "dmsetup ls --tree")
    table = _output(root, ["dmsetup", "table"])
    if table is not None:
        for mapped, lowers in dmsetup_table_lower(table).items():
            for devno in lowers:
                add(names.of_mapped(mapped), names.by_devno.get(devno), "dmsetup table")
    if names.lsblk is not None:
        for upper, lower in lsblk_edges(names.lsblk):
            add(names.of_row(upper), names.of_row(lower), "lsblk")

    for dev in lacking:
        said = found[dev.name]
        if not said:
            continue
        # holders/ lists are per lower device: gather them as one sysfs source
        merged: dict[str, list[str]] = {}
        for source, slaves in said.items():
            key = "holders/ of the lower devices" if source.startswith("holders/") else source
            merged.setdefault(key, []).extend(s for s in slaves if s not in merged.get(key, []))
        union: list[str] = []
        for slaves in merged.values():
            union.extend(s for s in slaves if s not in union)
        dev.slaves = union
        dev.slaves_source = ", ".join(merged)
        distinct = {tuple(sorted(s)) for s in merged.values()}
        if len(distinct) > 1:
            problems.append(f"{dev.name}: its sources disagree on what it is built on: " + "; ".join(
                f"{source}: {', '.join(slaves)}" for source, slaves in merged.items()))


def _output(root: HostRoot, argv: list[str]) -> str | None:
    result = root.run(argv)
    return result.stdout if result.error is None and result.stdout.strip() else None


class _Names:
    """Kernel names of what the outputs print: device numbers, mapped names, truncated names."""

    def __init__(self, root: HostRoot, devices: dict[str, BlockDevice]):
        self.lsblk = _output(root, ["lsblk"])
        self.by_devno: dict[str, str] = {d.maj_min: n for n, d in devices.items()
                                         if isinstance(d.maj_min, str)}
        self.mapped: dict[str, str] = {}          # dm name -> dm-N
        info = _output(root, ["dmsetup", "info", "-c"])
        for kernel_name, entry in (parse_info_columns(info) if info else {}).items():
            if kernel_name in devices:
                self.mapped[entry.name] = kernel_name
        for line in (info or "").splitlines():    # Name Maj Min ...: the mapped devices' numbers
            words = line.split()
            if len(words) > 2 and words[1].isdigit() and words[2].isdigit() \
                    and f"dm-{words[2]}" in devices:
                self._number(devices, f"dm-{words[2]}", f"{words[1]}:{words[2]}")
        if self.lsblk is not None:
            self._from_lsblk(devices, parse_lsblk_rows(self.lsblk))

    def _from_lsblk(self, devices: dict[str, BlockDevice], rows: list[TreeRow]) -> None:
        for row in rows:
            if row.name is None or row.devno is None:
                continue
            kernel = row.name if row.name in devices else self.mapped.get(row.name)
            if kernel is not None:
                self._number(devices, kernel, row.devno)

    def _number(self, devices: dict[str, BlockDevice], kernel: str, devno: str) -> None:
        self.by_devno.setdefault(devno, kernel)
        dev = devices[kernel]
        if isinstance(dev.maj_min, Unknown) and dev.maj_min.reason == "not present":
            dev.maj_min = devno     # lsblk's MAJ:MIN or dmsetup's Maj Min, for a root without `dev`

    def of_mapped(self, name: str) -> str | None:
        if name in self.mapped:
            return self.mapped[name]
        if name.endswith("..."):      # dmsetup ls --tree cuts long names short
            stem = name[:-3]
            hits = [kernel for full, kernel in self.mapped.items() if full.startswith(stem)]
            return hits[0] if len(hits) == 1 else None
        return None

    def of_row(self, row: TreeRow) -> str | None:
        if row.devno is not None and row.devno in self.by_devno:
            return self.by_devno[row.devno]
        return self.of_mapped(row.name) if row.name else None
