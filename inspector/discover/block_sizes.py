"""Block device sizes, numbers and partitions a root's sysfs lacks, from the tables it kept.

A sosreport copies /sys/block/*/queue/ but not `size`, `dev`, `ro` nor the partition
directories; it copies /proc/partitions (major, minor, size in 1 KiB blocks and name of every
block device with a capacity: the kernel's show_partition() skips empty and hidden disks) and
keeps what `blockdev --report` printed (read-only flag, start sector and size in bytes per
/dev node). The block collector asks here, on a root that is not the live host, for what
sysfs does not have. Sizes: `blockdev --report`'s bytes, else /proc/partitions' KiB x 1024
(exact for every device of whole KiB: partitions are aligned, disks are sized in 4 KiB units
almost always); a device in /sys/block but not in /proc/partitions has no capacity. The
devices a device-mapper device is built on (sysfs `slaves`): `dmsetup ls --tree`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inspector.discover.dmsetup_text import parse_tree
from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

if TYPE_CHECKING:   # the block collector imports this module: its device type for hints only
    from inspector.discover.block import BlockDevice

# nvme multipath: the per-path disks (nvme0c1n1) are hidden from /proc/partitions, not empty
_HIDDEN = re.compile(r"nvme\d+c\d+n\d+")


@dataclass
class _Entry:
    maj_min: str | None = None
    kib: int | None = None
    size_bytes: int | None = None   # blockdev --report
    start_sector: int | None = None
    read_only: bool | None = None


class PartitionTables:
    """/proc/partitions and `blockdev --report` of a root, read when first needed."""

    def __init__(self, root: HostRoot):
        self.root = root
        self._entries: dict[str, _Entry] | None = None
        self._listed = False   # /proc/partitions was readable: absence then means no capacity

    def entries(self) -> dict[str, _Entry]:
        if self._entries is None:
            self._entries = {}
            self._read_proc_partitions(self._entries)
            self._read_blockdev_report(self._entries)
        return self._entries

    def _read_proc_partitions(self, entries: dict[str, _Entry]) -> None:
        try:
            text = self.root.read_text("proc/partitions")
        except Unavailable:
            return
        self._listed = True
        for line in text.splitlines():
            fields = line.split()
            if len(fields) == 4 and fields[0].isdigit() and fields[1].isdigit() and fields[2].isdigit():
                entry = entries.setdefault(fields[3], _Entry())
                entry.maj_min, entry.kib = f"{fields[0]}:{fields[1]}", int(fields[2])

    def _read_blockdev_report(self, entries: dict[str, _Entry]) -> None:
        result = self.root.run(["blockdev", "--report"])
        if not result.ok:
            return
        for line in result.stdout.splitlines():
            # RO RA SSZ BSZ StartSec Size Device
            fields = line.split()
            if len(fields) != 7 or not fields[5].isdigit() or not fields[6].startswith("/dev/"):
                continue
            entry = entries.setdefault(fields[6][5:], _Entry())
            entry.size_bytes = int(fields[5])
            entry.start_sector = int(fields[4]) if fields[4].isdigit() else None
            entry.read_only = {"ro": True, "rw": False}.get(fields[0])

    def partitions_of(self, disk: str) -> list[str]:
        """Partition names of `disk` listed in the tables (sda1; nvme0n1p1 after a digit)."""
        sep = "p" if disk[-1:].isdigit() else ""
        pattern = re.compile(re.escape(disk) + sep + r"\d+")
        return [name for name in self.entries() if pattern.fullmatch(name)]

    def fill(self, devices: dict[str, BlockDevice]) -> None:
        """Size, device number, read-only flag and partition placement where sysfs had none."""
        if not any(_absent(d.size_bytes) or _absent(d.maj_min) for d in devices.values()):
            return
        entries = self.entries()
        for name, dev in devices.items():
            entry = entries.get(name)
            if entry is None:
                if _absent(dev.size_bytes) and self._listed and not _HIDDEN.fullmatch(name):
                    dev.size_bytes = 0
                continue
            if _absent(dev.size_bytes):
                if entry.size_bytes is not None:
                    dev.size_bytes = entry.size_bytes
                elif entry.kib is not None:
                    dev.size_bytes = entry.kib * 1024
            if _absent(dev.maj_min) and entry.maj_min:
                dev.maj_min = entry.maj_min
            if _absent(dev.read_only) and entry.read_only is not None:
                dev.read_only = entry.read_only
            if dev.parent is not None:
                self._place_partition(dev, entry)
        self._dm_slaves(devices)

    def _dm_slaves(self, devices: dict[str, BlockDevice]) -> None:
        lacking = [d for d in devices.values() if d.family == "dm" and d.parent is None
                   and not d.slaves and not self.root.exists(f"sys/block/{d.name}/slaves")]
        if not lacking:
            return
        result = self.root.run(["dmsetup", "ls", "--tree"])
        if not result.ok:
            return
        tree = parse_tree(result.stdout)
        by_devno = {d.maj_min: n for n, d in devices.items() if isinstance(d.maj_min, str)}
        for dev in lacking:
            below = tree.get(dev.maj_min, []) if isinstance(dev.maj_min, str) else []
            dev.slaves = [by_devno[n] for n in below if n in by_devno]

    @staticmethod
    def _place_partition(dev: BlockDevice, entry: _Entry) -> None:
        if dev.partition_number is None:   # no sysfs `partition` file: the name's number
            digits = re.search(r"(\d+)$", dev.name)
            dev.partition_number = int(digits[1]) if digits else Unknown("partition number not kept")
        if dev.start_sector is None:
            dev.start_sector = (entry.start_sector if entry.start_sector is not None
                                else Unknown("start sector: no sysfs start nor blockdev --report"))


def _absent(value: object) -> bool:
    """A sysfs read that failed because the root does not hold the file."""
    return isinstance(value, Unknown) and value.reason == "not present"
