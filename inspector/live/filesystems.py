"""Fill of the mounted filesystems (df), with every statvfs bounded in time.

Which mounts: those backed by a block device, network or FUSE filesystems (NFS, CIFS,
Ceph, 9p, sshfs ...) and tmpfs outside the kernel's and systemd's runtime trees, one row per
filesystem (bind mounts of the same device and subtree are one). Pseudo filesystems (proc,
devtmpfs, cgroup, overlay ...) and read-only images that are always full (squashfs,
iso9660: snaps, live media) are left out, as `df -x` users do.

statvfs on a hung NFS server or a stuck FUSE daemon blocks, and nothing can interrupt it. So
the calls run in a daemon thread, one after the other, and once one of them is slow each call
not begun yet gets a daemon thread of its own; a sweep waits at most `timeout` seconds; a mount
whose previous call is still blocked is not called again (no pile of stuck threads) and shows
as unknown "statvfs timed out after N s" until that call returns. The list of mounts
(/proc/self/mountinfo, which lxcfs-style FUSE servers can sit on too) is read the same way
(inspector.roots.bounded.Reads): a sweep takes at most twice `timeout`.
"""
from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from inspector.discover.block import Mount, parse_mountinfo
from inspector.model import Unknown
from inspector.roots.bounded import Reads
from inspector.roots.host import HostRoot

SKIP_TYPES = frozenset({"squashfs", "iso9660", "udf", "overlay", "tmpfs", "devtmpfs", "ramfs"})
NETWORK_TYPES = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "9p",
                           "virtiofs", "lustre", "gpfs", "beegfs", "afs", "ncpfs", "davfs"})
DISK_TYPES = frozenset({"zfs", "btrfs"})     # may name a pool, not /dev/...
STATVFS_TIMEOUT = 1.0
PATIENCE = 0.1     # seconds the statvfs calls in turn may take before each gets a thread
RUNTIME_TREES = ("/sys", "/proc", "/dev", "/run/user/", "/run/credentials/", "/run/lock")


@dataclass(slots=True)
class FsUse:
    mountpoint: str
    fstype: str
    source: str
    majmin: str
    size_bytes: int | Unknown
    used_bytes: int | Unknown
    avail_bytes: int | Unknown          # what an unprivileged user may still write
    inodes_used_pct: float | None = None

    @property
    def used_pct(self) -> float | None:
        """df's Use%: used / (used + avail), the root reserve not counted as free."""
        if isinstance(self.used_bytes, int) and isinstance(self.avail_bytes, int):
            total = self.used_bytes + self.avail_bytes
            return 100.0 * self.used_bytes / total if total else 0.0
        return None


def wanted(fstype: str, source: str, mountpoint: str | None = None) -> bool:
    """Whether a mount gets a row. tmpfs does when its mountpoint is given and is not a
    runtime tree of the kernel or systemd (/dev/shm, /run, /tmp and a tmpfs an application
    mounted fill up like disks, and their writers fail the same way)."""
    if fstype == "tmpfs" and mountpoint is not None:
        return not mountpoint.startswith(RUNTIME_TREES) or mountpoint == "/dev/shm"
    if fstype in SKIP_TYPES:
        return False
    return (source.startswith("/dev/") or fstype in NETWORK_TYPES or fstype in DISK_TYPES
            or fstype.startswith("fuse.") and fstype != "fuse.lxcfs")


class FilesystemSampler:
    """`sample()` -> [FsUse] | Unknown. Live roots only: a capture holds no statvfs."""

    def __init__(self, root: HostRoot, timeout: float = STATVFS_TIMEOUT,
                 statvfs: Callable[[str], os.statvfs_result] = os.statvfs):
        self.root = root
        self.timeout = timeout
        self._statvfs = statvfs
        self._blocked: dict[str, float] = {}       # mountpoint -> when its call started
        self._lock = threading.Lock()
        self._reads = Reads()

    def mounts(self) -> list[tuple[str, Mount]] | Unknown:
        read = self._reads.start("mountinfo", lambda: self.root.try_text("proc/self/mountinfo"))
        text = read.result(time.monotonic() + self.timeout)
        if read.timed_out:
            return Unknown(f"/proc/self/mountinfo {read.timed_out}")
        if isinstance(text, Unknown):
            return Unknown(f"/proc/self/mountinfo: {text.reason}")
        return list(distinct_mounts(text))

    def sample(self) -> list[FsUse] | Unknown:
        if not self.root.live:
            return Unknown("capture: no filesystem fill (statvfs is not recorded)")
        if self.root.remote:
            return Unknown(f"over ssh: no filesystem fill (statvfs runs on {self.root.remote})")
        mounts = self.mounts()
        if isinstance(mounts, Unknown):
            return mounts
        paths = []
        with self._lock:
            for _, mount in mounts:
                if mount.mountpoint not in self._blocked:     # a call still blocked: skipped
                    self._blocked[mount.mountpoint] = time.monotonic()
                    paths.append(mount.mountpoint)
        results = self._statvfs_all(paths, time.monotonic() + self.timeout)
        out = []
        for majmin, mount in mounts:
            got = results.get(mount.mountpoint)
            if got is None:
                reason = Unknown(f"statvfs timed out after {self.timeout:g} s")
                out.append(FsUse(mount.mountpoint, mount.fstype, mount.source, majmin,
                                 reason, reason, reason))
            elif isinstance(got, OSError):
                reason = Unknown(f"statvfs: {got.strerror or got}")
                out.append(FsUse(mount.mountpoint, mount.fstype, mount.source, majmin,
                                 reason, reason, reason))
            else:
                out.append(self._use(mount, majmin, got))
        return out

    def _statvfs_all(self, paths: list[str], deadline: float
                     ) -> dict[str, os.statvfs_result | OSError]:
        """statvfs of each path by `deadline` (those that did not answer are missing): one
        after the other in one thread (a thread each cost more than the calls themselves);
        if they are not all done after PATIENCE, each path not begun gets a thread of its
        own, so one that hangs costs the others nothing."""
        results: dict[str, os.statvfs_result | OSError] = {}
        if not paths:
            return results
        queue = deque(paths)
        answered = threading.Condition()

        def stat(path: str) -> None:
            try:
                value: os.statvfs_result | OSError = self._statvfs(self.root.host_path(path))
            except OSError as exc:
                value = exc
            with self._lock:
                self._blocked.pop(path, None)
            with answered:
                results[path] = value
                answered.notify_all()

        def next_path() -> str | None:
            with answered:
                return queue.popleft() if queue else None

        def in_turn() -> None:
            while (path := next_path()) is not None:
                stat(path)

        def all_in() -> bool:
            return len(results) == len(paths)
        threading.Thread(target=in_turn, daemon=True, name="statvfs in turn").start()
        with answered:
            answered.wait_for(all_in, max(0.0, min(PATIENCE, deadline - time.monotonic())))
            left = list(queue)
            queue.clear()
        for path in left:
            threading.Thread(target=stat, args=(path,), daemon=True, name="statvfs").start()
        with answered:
            answered.wait_for(all_in, max(0.0, deadline - time.monotonic()))
            return dict(results)     # a late answer lands in `results`, not in this sweep

    @staticmethod
    def _use(mount: Mount, majmin: str, st: os.statvfs_result) -> FsUse:
        frsize = st.f_frsize or st.f_bsize
        size = st.f_blocks * frsize
        used = (st.f_blocks - st.f_bfree) * frsize
        inodes = (100.0 * (st.f_files - st.f_ffree) / st.f_files) if st.f_files else None
        return FsUse(mount.mountpoint, mount.fstype, mount.source, majmin, size, used,
                     st.f_bavail * frsize, inodes)


def distinct_mounts(mountinfo: str) -> Iterator[tuple[str, Mount]]:
    """(maj:min, mount) of each filesystem worth a fill figure, once: a bind mount of one
    already listed is skipped."""
    seen: set[tuple[str, str]] = set()
    for majmin, mount in parse_mountinfo(mountinfo):
        if not wanted(mount.fstype, mount.source, mount.mountpoint):
            continue
        key = (majmin, mount.source)
        if key not in seen:
            seen.add(key)
            yield majmin, mount
