"""What request sizes a target accepts: O_DIRECT needs whole logical blocks of its device.

The logical block size comes from sysfs through a HostRoot (`queue/logical_block_size` of the
disk holding the target; a partition's queue is its parent disk's), so the answer is the
same one `inspector report` shows. Devices without a sysfs entry (tmpfs, overlay, NFS: device
major 0) give Unknown: the caller then relies on a trial O_DIRECT read.
"""
from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass

from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

DEFAULT_ALIGNMENT = 512     # O_DIRECT never accepts less than a 512-byte sector


@dataclass
class BlockGeometry:
    device: str                 # "vda", "loop3": for messages
    logical_block_size: int


def device_geometry(root: HostRoot, dev: int) -> BlockGeometry | Unknown:
    """The logical block size of block device number `dev` (st_rdev, or st_dev of a file)."""
    if os.major(dev) == 0:
        return Unknown("no block device (a virtual or network filesystem)")
    link = f"sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    try:
        where = root.resolve(link)
    except Unavailable as exc:
        return exc.unknown()
    if not root.exists(where):
        return Unknown(f"/{link} not found")
    disk = posixpath.dirname(where) if root.exists(f"{where}/partition") else where
    size = root.try_int(f"{disk}/queue/logical_block_size")
    if isinstance(size, Unknown):
        return size
    if size <= 0:
        return Unknown(f"/{disk}/queue/logical_block_size is {size}")
    return BlockGeometry(posixpath.basename(where), size)


def required_multiple(geometry: BlockGeometry | Unknown) -> int | None:
    """The multiple O_DIRECT request sizes (and so offsets) must be: the logical block size,
    never less than a sector (a page-aligned buffer covers the memory alignment). None when
    unknown: the filesystem decides, and a trial read asks it."""
    if isinstance(geometry, Unknown):
        return None
    return max(geometry.logical_block_size, DEFAULT_ALIGNMENT)
