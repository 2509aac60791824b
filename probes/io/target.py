"""Opening what an IO latency probe measures: a directory, a regular file or a block device.

Safety rules (never relaxed): a block device or an existing file is opened read-only, and a
write or mixed probe on one is refused. Writes only go to a private temporary file inside a
directory target (O_TMPFILE, or created and unlinked at once), so nothing is left behind.

O_DIRECT is the default. Where the filesystem refuses it (EINVAL, e.g. ramfs, some FUSE
filesystems) the target falls back to buffered IO and the workers drop the page cache range
with POSIX_FADV_DONTNEED before every request (outside the timed window), as ioping does.

Request sizes are checked before anything is written: positive, at most the target's size,
and with O_DIRECT a multiple of the logical block size of the target's device (from sysfs,
through a HostRoot: io_align); where sysfs has no answer, one trial O_DIRECT read decides.

The probe is live by nature (it times syscalls on this host), so it reads /proc/self/mountinfo
directly instead of going through a HostRoot.

Set-up is bounded: on a filesystem that never answers (a hung FUSE or NFS mount) the stat or
the open would wait in the kernel for good, where no thread can be cancelled and a process
cannot even exit. So open_target does it in a forked child (inspector.roots.bounded) and receives
the open descriptor over a Unix socket; after `setup_timeout` seconds it fails with one line
and the stuck child, not the caller, waits for the filesystem.
"""
from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inspector.roots.host import HostRoot

DEFAULT_DIR_WORKING_SET = 64 << 20
# stat, open, and for a directory writing and syncing the 64 MiB test file: a slow disk at
# 10 MB/s takes 7 s of this
SETUP_TIMEOUT = 15.0
FILL_CHUNK = 1 << 20
BLKGETSIZE64 = 0x80081272
BLKSSZGET = 0x1268


class TargetError(Exception):
    """The target cannot be probed (missing, permission, refused write, too small)."""


@dataclass
class IoTarget:
    path: str
    kind: str                     # "directory" | "file" | "block device"
    fd: int
    working_set: int              # bytes over which offsets are drawn
    direct: bool                  # O_DIRECT in effect
    writable: bool                # only the private temp file of a directory
    fs_type: str = "?"
    fs_source: str = "?"
    fs_size: int | None = None
    cached: bool = False          # --cached: buffered and the page cache left alone
    device_size: int | None = None   # a block device's whole size (-S may probe less of it)
    notes: list[str] = field(default_factory=list)   # e.g. the O_DIRECT fallback, for humans
    closed: bool = False

    @property
    def fadvise(self) -> bool:
        """Buffered but meant to be uncached: drop the range before each request."""
        return not self.direct and not self.cached

    def describe(self) -> str:
        """ioping's parenthesised description: "ext4 /dev/vda 252.0 GiB"."""
        from inspector.probes.io.format import fmt_size
        if self.kind == "block device":     # like ioping: the device's size, whatever -S is
            return f"block device {fmt_size(self.device_size or self.working_set)}"
        parts = [self.fs_type, self.fs_source]
        if self.fs_size:
            parts.append(fmt_size(self.fs_size))
        return " ".join(parts)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)

    def __enter__(self) -> IoTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_target(path: str, *, write: bool = False, request_size: int = 4096,
                working_set: int | None = None, direct: bool = True,
                root: HostRoot | None = None,
                setup_timeout: float | None = SETUP_TIMEOUT) -> IoTarget:
    """Resolve and open PATH for probing; raises TargetError with a one-line reason.

    `root` (a HostRoot, the live one by default) answers the device's logical block size.
    The set-up runs in a child process under `setup_timeout` seconds (None: in this process,
    unbounded)."""
    def open_here() -> IoTarget:
        return _open_target(path, write=write, request_size=request_size,
                            working_set=working_set, direct=direct, root=root)
    if setup_timeout is None:
        return open_here()
    from inspector.roots.bounded import TimedOut, WithFds, WorkerFailed, run_forked

    def in_child() -> WithFds:
        try:
            target = open_here()
        except TargetError as exc:      # travels back as a value, with its message
            return WithFds(str(exc), [])
        return WithFds(target, [target.fd])
    try:
        answer = run_forked(in_child, setup_timeout)
    except TimedOut:
        raise TargetError(f"{path}: no answer after {setup_timeout:g} s (a hung filesystem or "
                          "device? look for processes in D state)") from None
    except WorkerFailed as exc:
        raise TargetError(f"{path}: set-up failed: {exc}") from None
    if not isinstance(answer, WithFds):     # no descriptor: the child's TargetError
        raise TargetError(answer)
    target = answer.value
    target.fd = answer.fds[0]
    return target


def _open_target(path: str, *, write: bool, request_size: int, working_set: int | None,
                 direct: bool, root: HostRoot | None) -> IoTarget:
    if request_size <= 0:
        raise TargetError(f"request size {request_size} must be positive")
    if working_set is not None and working_set <= 0:
        raise TargetError(f"working set {working_set} must be positive")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise TargetError(f"{path}: no such file, directory or device") from None
    except PermissionError:
        raise TargetError(f"{path}: permission denied") from None
    except OSError as exc:
        raise TargetError(f"{path}: {exc.strerror}") from None
    if direct and (stat.S_ISDIR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                   or stat.S_ISREG(st.st_mode)):
        _check_direct_size(path, st, request_size, root)

    if stat.S_ISDIR(st.st_mode):
        target = _open_directory(path, request_size, working_set or DEFAULT_DIR_WORKING_SET,
                                 direct)
    elif stat.S_ISBLK(st.st_mode) or stat.S_ISREG(st.st_mode):
        kind = "block device" if stat.S_ISBLK(st.st_mode) else "file"
        if write:
            raise TargetError(
                f"refusing to write to {kind} {path}: write probes only run in a private "
                "temporary file inside a directory target (pass a directory)")
        target = _open_readonly(path, kind, request_size, working_set, direct)
    else:
        raise TargetError(f"{path}: not a directory, regular file or block device")
    target.cached = not direct
    _describe_fs(target, st)
    return target


def _check_direct_size(path: str, st: os.stat_result, request_size: int,
                       root: HostRoot | None) -> None:
    """O_DIRECT moves whole logical blocks: refuse other sizes before any preparation."""
    from inspector.model import Unknown
    from inspector.probes.io.align import device_geometry, required_multiple
    from inspector.roots.host import HostRoot
    dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
    geometry = device_geometry(root if root is not None else HostRoot("/"), dev)
    multiple = required_multiple(geometry)
    if multiple is None or isinstance(geometry, Unknown) or request_size % multiple == 0:
        return
    fits = max(multiple, request_size - request_size % multiple)
    raise TargetError(
        f"request size {request_size} is not a multiple of {multiple}, the logical block size "
        f"of {geometry.device} holding {path} (O_DIRECT moves whole blocks: try -s {fits}, "
        "or --cached)")


def _too_small(path: str, size: int, request_size: int) -> TargetError:
    return TargetError(f"request size {request_size} is larger than {path} "
                       f"({size} bytes to probe)")


def _open_flags(path: str, flags: int, direct: bool, mode: int = 0o600) -> tuple[int, bool]:
    """Open with O_DIRECT when asked; (fd, direct_in_effect). EINVAL means no O_DIRECT here."""
    try:
        if direct:
            try:
                return os.open(path, flags | os.O_DIRECT, mode), True
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
        return os.open(path, flags, mode), False
    except PermissionError:
        raise TargetError(f"{path}: permission denied") from None
    except OSError as exc:
        raise TargetError(f"{path}: {exc.strerror}") from None


def _fallback_note(path: str) -> str:
    return (f"O_DIRECT is not supported on {path}: buffered reads with POSIX_FADV_DONTNEED "
            "before each request")


def _open_readonly(path: str, kind: str, request_size: int, working_set: int | None,
                   direct: bool) -> IoTarget:
    fd, direct_ok = _open_flags(path, os.O_RDONLY, direct)
    try:
        size = full = _device_size(fd) if kind == "block device" else os.fstat(fd).st_size
        if kind == "block device" and direct_ok:
            sector = _logical_block_size(fd)     # the kernel's word, should sysfs differ
            if request_size % sector:
                raise TargetError(f"request size {request_size} is not a multiple of {sector}, "
                                  f"the logical block size of {path} (try --cached)")
        if size < request_size:
            raise _too_small(path, size, request_size)
        if working_set:
            if working_set < request_size:
                raise TargetError(f"working set {working_set} is smaller than one request "
                                  f"({request_size} bytes)")
            size = min(size, working_set)
        size -= size % request_size
        if direct_ok:
            _check_direct_read(fd, request_size)
    except BaseException:
        os.close(fd)
        raise
    target = IoTarget(path, kind, fd, size, direct_ok, writable=False,
                      device_size=full if kind == "block device" else None)
    if direct and not direct_ok:
        target.notes.append(_fallback_note(path))
    return target


def _check_direct_read(fd: int, request_size: int) -> None:
    """One aligned read so a misaligned request size fails at preparation, not mid-run."""
    import mmap
    buf = mmap.mmap(-1, max(request_size, mmap.PAGESIZE))
    try:
        os.preadv(fd, [memoryview(buf)[:request_size]], 0)
    except OSError as exc:
        hint = (" (the request size must be a multiple of the device's O_DIRECT alignment; "
                "try --cached)" if exc.errno == errno.EINVAL else "")
        raise TargetError(f"O_DIRECT read of request size {request_size} failed: "
                          f"{exc.strerror}{hint}") from None
    finally:
        buf.close()


def _open_directory(path: str, request_size: int, working_set: int, direct: bool) -> IoTarget:
    if working_set < request_size:
        raise TargetError(f"request size {request_size} is larger than the working set "
                          f"({working_set} bytes)")
    working_set -= working_set % request_size
    fd = _private_file(path)
    try:
        vfs = os.fstatvfs(fd)
        free = vfs.f_bavail * vfs.f_frsize
        if vfs.f_blocks and free < working_set:     # ramfs and the like report no sizes
            from inspector.probes.io.format import fmt_size
            raise TargetError(f"{path}: {fmt_size(free)} free, the working set needs "
                              f"{fmt_size(working_set)} (-S sets it)")
        _fill(fd, working_set, path)
        direct_ok = False
        if direct:
            try:
                fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_DIRECT)
                direct_ok = True
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise TargetError(f"{path}: {exc.strerror}") from None
            if direct_ok:
                _check_direct_read(fd, request_size)
    except BaseException:
        os.close(fd)
        raise
    target = IoTarget(path, "directory", fd, working_set, direct_ok, writable=True)
    if direct and not direct_ok:
        target.notes.append(_fallback_note(path))
    return target


def _private_file(directory: str) -> int:
    """An anonymous file in DIRECTORY: O_TMPFILE, else mkstemp and unlink at once."""
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
    except PermissionError:
        raise TargetError(f"{directory}: permission denied (cannot create a file)") from None
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            raise TargetError(f"{directory}: cannot create a temporary file: {exc.strerror}") \
                from None
    import tempfile
    try:
        fd, name = tempfile.mkstemp(prefix=".inspector-ioprobe-", dir=directory)
    except PermissionError:
        raise TargetError(f"{directory}: permission denied (cannot create a file)") from None
    except OSError as exc:     # e.g. /proc: ENOENT, though the directory exists
        raise TargetError(f"{directory}: cannot create a temporary file: {exc.strerror}") \
            from None
    os.unlink(name)
    return fd


def _fill(fd: int, size: int, path: str) -> None:
    """Write real data (not a hole, which reads as zeros without touching the disk), then sync
    and drop it from the page cache so the first timed reads are not cache hits."""
    chunk = os.urandom(FILL_CHUNK)
    done = 0
    try:
        while done < size:
            n = min(FILL_CHUNK, size - done)
            done += os.pwrite(fd, chunk[:n], done)
        os.fsync(fd)
    except OSError as exc:
        raise TargetError(f"{path}: cannot fill the {size}-byte test file: {exc.strerror}") \
            from None
    os.posix_fadvise(fd, 0, size, os.POSIX_FADV_DONTNEED)


def _device_size(fd: int) -> int:
    try:
        return struct.unpack("Q", fcntl.ioctl(fd, BLKGETSIZE64, b"\0" * 8))[0]
    except OSError:
        return os.lseek(fd, 0, os.SEEK_END)


def _logical_block_size(fd: int) -> int:
    try:
        return struct.unpack("i", fcntl.ioctl(fd, BLKSSZGET, b"\0" * 4))[0] or 512
    except OSError:
        return 512


def _describe_fs(target: IoTarget, st: os.stat_result) -> None:
    """Filesystem type, source device and size for ioping's "(ext4 /dev/vda 252.0 GiB)"."""
    if target.kind == "block device":
        return
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) > 2 and fields[2] == dev:
                    fs = right.split()
                    target.fs_type = fs[0] if fs else "?"
                    target.fs_source = fs[1] if len(fs) > 1 else "?"
                    break
    except OSError:
        pass
    try:
        vfs = os.fstatvfs(target.fd)
        target.fs_size = vfs.f_blocks * vfs.f_frsize
    except OSError:
        pass
