"""Reading a file named on the command line (a snapshot for `diff`, an ioping log to import):
a regular file or stdin, read up to a bound.

`diff /dev/zero x.json` read 4.9 GB in 6 s before failing; a FIFO nobody writes to hung. The
file is opened without blocking, must be a regular file (or "-", stdin), and is refused with
one line when it is larger than what the caller can hold. A file is read by a forked child,
given up when it stops making progress."""
from __future__ import annotations

import os
import stat
import sys

from inspector.roots.bounded import TimedOut, WorkerFailed, run_forked_while_progressing
from inspector.writing.paths import file_kind

# a read that has moved no byte for this long is given up (what `--root` waits for too)
READ_STALL_S = 5.0


class InputError(Exception):
    """A file we refuse to read, or could not; the message is one line naming it."""


def read_input(path: str, limit: int, what: str, watched: bool = True) -> bytes:
    """The bytes of `path` ("-": stdin), at most `limit` of them; `what` names the expected
    content in messages ("snapshot", "ioping log"). `watched=False` reads in this process
    (a fork costs a millisecond or two: too much for hundreds of files in one listing)."""
    if path == "-":
        try:            # a pipe or a terminal; stdin redirected from a directory fails here
            data = sys.stdin.buffer.read(limit + 1)
        except OSError as exc:
            raise InputError(f"stdin: {exc.strerror or exc}") from None
    elif watched:
        data = _read_file_watched(path, limit, what)
    else:
        data = _read_file(path, limit, what)
    if len(data) > limit:
        raise InputError(f"{path}: {_too_big(limit, what)}")
    return data


def _read_file_watched(path: str, limit: int, what: str) -> bytes:
    """_read_file in a forked child, waited for while it reads: a file on a mount that answers
    its stat and then stalls its reads would leave this process asleep in the kernel for good,
    deaf to Ctrl-C (inspector.roots.bounded)."""
    def read() -> tuple[str, bytes | str]:
        try:
            return "data", _read_file(path, limit, what)
        except InputError as exc:
            return "refused", str(exc)

    try:
        kind, value = run_forked_while_progressing(read, READ_STALL_S, "it")
    except TimedOut as exc:
        raise InputError(f"{path}: {exc}") from None
    except WorkerFailed as exc:
        raise InputError(f"{path}: cannot be read ({exc})") from None
    if kind == "refused":
        raise InputError(str(value))
    assert isinstance(value, bytes)
    return value


def _read_file(path: str, limit: int, what: str) -> bytes:
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    try:
        # checked on the descriptor before a file object is made of it (which refuses
        # a directory with IsADirectoryError)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            article = "an" if what[:1] in "aeiou" else "a"
            raise InputError(f"{path}: {file_kind(st.st_mode)}, not {article} {what} file")
        if st.st_size > limit:
            raise InputError(f"{path}: {st.st_size} bytes, {_too_big(limit, what)}")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as f:
        try:
            return f.read(limit + 1)           # it may have grown since fstat
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from None


def _too_big(limit: int, what: str) -> str:
    return f"over the {_size(limit)} a {what} can be"


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"
