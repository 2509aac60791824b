"""Filesystem fill of a host read over ssh: its df, run by the live loop under the host's
`timeout`, as the FsUse rows the local sampler makes with statvfs (inspector.live.filesystems):
the same mounts (the host's mount table through the same filter), df's figures for each. df
prints what statvfs says: size f_blocks, used f_blocks - f_bfree, available f_bavail (KiB
with -k), inodes f_files and used f_files - f_ffree.

GNU df gives all of it in one run (`df -k --output=...`, coreutils 8.21 and later); other dfs
(busybox) in two, `df -P -k` and `df -P -i`.
"""
from __future__ import annotations

import re

from inspector.live.filesystems import FsUse, distinct_mounts
from inspector.model import Unknown

GNU_COLUMNS = "source,size,used,avail,itotal,iused,target"
# a row: source, then numbers, then the mount point: the rest of the line, spaces and all
_GNU_ROW = re.compile(r"^(?P<source>\S+)\s+(?P<size>\d+)\s+(?P<used>\d+)\s+(?P<avail>\d+)\s+"
                      r"(?P<itotal>\d+|-)\s+(?P<iused>\d+|-)\s+(?P<mountpoint>/.*)$")
# df -P -k: Filesystem 1024-blocks Used Available Capacity Mounted-on; -P -i: Inodes IUsed
# IFree IUse% (one line per filesystem, whatever the lengths)
_POSIX_ROW = re.compile(r"^(?P<source>\S+)\s+(?P<total>\d+)\s+(?P<used>\d+)\s+(?P<free>\d+)\s+"
                        r"(?:\d+%|-)\s+(?P<mountpoint>/.*)$")

# mount point -> (source, KiB size, KiB used, KiB available, inodes, inodes used)
Table = dict[str, tuple[str, int, int, int, int | None, int | None]]


def parse_gnu(text: str) -> Table | None:
    """None when df printed not even its header (it failed, or its timeout ended it)."""
    if not text.startswith("Filesystem"):
        return None
    out: Table = {}
    for line in text.splitlines():
        m = _GNU_ROW.match(line)
        if m:
            out.setdefault(m["mountpoint"], (
                m["source"], int(m["size"]), int(m["used"]), int(m["avail"]),
                int(m["itotal"]) if m["itotal"].isdigit() else None,
                int(m["iused"]) if m["iused"].isdigit() else None))
    return out


def parse_posix(blocks: str, inodes: str) -> Table | None:
    """Lines that are not rows (the header, a mount point with a newline, cut in two) are
    left out; None when df -k printed not even its header."""
    if not blocks.startswith("Filesystem"):
        return None
    inode_rows: dict[str, tuple[int, int]] = {}
    for line in inodes.splitlines():
        m = _POSIX_ROW.match(line)
        if m:
            inode_rows.setdefault(m["mountpoint"], (int(m["total"]), int(m["used"])))
    out: Table = {}
    for line in blocks.splitlines():
        m = _POSIX_ROW.match(line)
        if m:
            itotal, iused = inode_rows.get(m["mountpoint"], (None, None))
            out.setdefault(m["mountpoint"], (m["source"], int(m["total"]), int(m["used"]),
                                             int(m["free"]), itotal, iused))
    return out


def fill_rows(mountinfo: str, table: Table | None) -> list[FsUse] | Unknown:
    """The host's filesystems as the local sampler lists them, with df's figures. A mount df
    did not print (GNU df shows one mount per device) takes the row of the same source; one
    with none at all is unknown."""
    if table is None:
        return Unknown("df printed nothing")
    by_source = {row[0]: row for row in reversed(table.values())}   # the first one wins
    out: list[FsUse] = []
    for majmin, mount in distinct_mounts(mountinfo):
        row = table.get(mount.mountpoint) or by_source.get(mount.source)
        if row is None:
            reason = Unknown("not in df's output")
            out.append(FsUse(mount.mountpoint, mount.fstype, mount.source, majmin,
                             reason, reason, reason))
            continue
        _, size, used, avail, itotal, iused = row
        inodes_pct = 100.0 * iused / itotal if itotal and iused is not None else None
        out.append(FsUse(mount.mountpoint, mount.fstype, mount.source, majmin, size * 1024,
                         used * 1024, avail * 1024, inodes_pct))
    return out
