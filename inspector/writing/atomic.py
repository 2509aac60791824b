"""Writing an output file (`-o`, `--textfile`) safely: only over a regular file or at a new
path, atomically, never through another user's link.

Whatever `-o` names must survive a slip of the keyboard: a device node (`-o /dev/sda`,
`-o /dev/null`), a directory, a FIFO or a socket is refused, never replaced by a regular file
(replacing /dev/null with a file breaks a running system). A symlink is followed to the file it
names, which is replaced and the link kept; a link to anything but a regular file (or to a new
path) is refused like the thing itself. Links are followed under the kernel's
protected_symlinks rule, applied here (inspector.writing.paths): another user's link in a
sticky world-writable directory such as /tmp is refused, never followed as root.

The data goes to a temporary file created (O_CREAT|O_EXCL|O_NOFOLLOW) in the target's
directory through a descriptor on it, is fsynced, and replaces the target with one rename in
that same directory (then the directory is fsynced), so a reader (node_exporter, a runbook's
`diff`) never sees half a file, a crash or a full disk leaves the old one and no empty or
partial file, and no path is looked up again between the check and the write. A file that
existed keeps its mode and owner; a new one gets 0666 less the umask (0600 for `private`
output such as a capture, which holds a host's configuration)."""
from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from inspector.writing.paths import OutputError, Place, check_entry, file_kind, locate

__all__ = ["OutputError", "atomic_output", "file_kind", "output_target", "write_atomic"]


def output_target(path: str) -> str:
    """The path a write to `path` replaces or creates: itself, or the file its symlinks end
    at. OutputError when we refuse it (see inspector.writing.paths)."""
    with locate(path) as place:
        return place.path


def _create_temp(place: Place, mode: int) -> tuple[int, str]:
    # O_EXCL|O_NOFOLLOW: a name someone placed there first (a link to a device) is never
    # opened; the kernel applies the umask to `mode`, as for any file the user creates
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        # os.urandom is what secrets.token_hex reads; secrets imports hmac and OpenSSL
        tmp = f".inspector-{os.urandom(6).hex()}.tmp"
        try:
            return os.open(tmp, flags, mode, dir_fd=place.dir_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {place.directory}")


def _keep_owner_and_mode(fd: int, before: os.stat_result | None) -> None:
    if before is None:
        return
    os.fchmod(fd, stat.S_IMODE(before.st_mode))
    if os.geteuid() == 0 and (before.st_uid, before.st_gid) != (os.getuid(), os.getgid()):
        with contextlib.suppress(OSError):   # root replacing a user's file: it stays theirs
            os.fchown(fd, before.st_uid, before.st_gid)


def _fsync_directory(place: Place) -> None:
    with contextlib.suppress(OSError):   # make the rename itself durable
        dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=place.dir_fd)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


@contextlib.contextmanager
def atomic_output(path: str, private: bool = False) -> Iterator[BinaryIO]:
    """`with atomic_output(path) as f: f.write(...)`: the target is replaced when the block
    ends without an exception; on an exception it is untouched and the temporary file gone.
    OutputError (before anything is created) for a path we refuse; OSError for a failed write."""
    with locate(path) as place:
        fd, tmp = _create_temp(place, 0o600 if private else 0o666)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
                _keep_owner_and_mode(f.fileno(), place.entry)
            # checked again just before the rename: a device node, a FIFO or a link put there
            # meanwhile is refused (rename would replace a link, not write through it)
            now = place.entry_now()
            if now is not None and stat.S_ISLNK(now.st_mode):
                raise OutputError(f"{path}: replaced by a symbolic link while it was written; "
                                  "not written")
            check_entry(path, place, now)
            os.rename(tmp, place.name, src_dir_fd=place.dir_fd, dst_dir_fd=place.dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=place.dir_fd)
            raise
        _fsync_directory(place)


def write_atomic(path: str, data: bytes, private: bool = False) -> None:
    with atomic_output(path, private=private) as f:
        f.write(data)
