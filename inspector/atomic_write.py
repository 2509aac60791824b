"""Writing an output file (`-o`) safely: only over a regular file or at a new path, atomically.

Whatever `-o` names must survive a slip of the keyboard: a device node (`-o /dev/sda`,
`-o /dev/null`), a directory, a FIFO or a socket is refused, never replaced by a regular file
(replacing /dev/null with a file breaks a running system). A symlink is followed to the file it
names, which is replaced and the link kept; a link to anything but a regular file (or to a new
path) is refused like the thing itself.

The data goes to a temporary file in the target's directory, is fsynced, and replaces the
target with one rename (then the directory is fsynced), so a reader (node_exporter, a
runbook's `diff`) never sees half a file and a crash leaves the old one. A file that existed
keeps its mode and owner; a new one gets 0666 less the umask (0600 for `private` output such
as a capture, which holds a host's configuration)."""
from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from typing import BinaryIO


class OutputError(Exception):
    """An output path we refuse to write; the message is one line naming the path."""


_KINDS = ((stat.S_ISBLK, "a block device"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISLNK, "a symbolic link that does not resolve"))


def file_kind(mode: int) -> str:
    """'a block device', 'a directory' ... for a message; 'a regular file' for one."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def output_target(path: str) -> str:
    """The path to replace for `path`: itself, or the file its symlinks end at. OutputError
    when that exists and is not a regular file, or its directory does not exist."""
    if not path:
        raise OutputError("empty output path")
    target = os.path.realpath(path)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        directory = os.path.dirname(target)
        if not os.path.isdir(directory):
            raise OutputError(f"{path}: no such directory {directory}") from None
        return target
    except OSError as exc:
        raise OutputError(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        via = f" ({target})" if target != os.path.abspath(path) else ""
        raise OutputError(f"{path}{via} is {file_kind(st.st_mode)}: refusing to replace it "
                          "(write to a regular file or a new path)")
    return target


def _create_temp(directory: str, mode: int) -> tuple[int, str]:
    # O_EXCL|O_NOFOLLOW: a name someone placed there first (a link to a device) is never
    # opened; the kernel applies the umask to `mode`, as for any file the user creates
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = os.path.join(directory, f".inspector-{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {directory}")


def _keep_owner_and_mode(fd: int, before: os.stat_result | None) -> None:
    if before is None:
        return
    os.fchmod(fd, stat.S_IMODE(before.st_mode))
    if os.geteuid() == 0 and (before.st_uid, before.st_gid) != (os.getuid(), os.getgid()):
        with contextlib.suppress(OSError):   # root replacing a user's file: it stays theirs
            os.fchown(fd, before.st_uid, before.st_gid)


@contextlib.contextmanager
def atomic_output(path: str, private: bool = False) -> Iterator[BinaryIO]:
    """`with atomic_output(path) as f: f.write(...)`: the target is replaced when the block
    ends without an exception; on an exception it is untouched and the temporary file gone.
    OutputError (before anything is created) for a path we refuse; OSError for a failed write."""
    target = output_target(path)
    try:
        before: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        before = None
    directory = os.path.dirname(target)
    fd, tmp = _create_temp(directory, 0o600 if private else 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
            _keep_owner_and_mode(f.fileno(), before)
        # checked again just before the rename: a device node put there meanwhile is refused
        if output_target(target) != target:
            raise OutputError(f"{path}: changed while it was written; not replaced")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):   # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def write_atomic(path: str, data: bytes, private: bool = False) -> None:
    with atomic_output(path, private=private) as f:
        f.write(data)
