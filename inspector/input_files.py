"""Reading a file named on the command line (a snapshot for `diff`, an ioping log to import):
a regular file or stdin, read up to a bound.

`diff /dev/zero x.json` read 4.9 GB in 6 s before failing; a FIFO nobody writes to hung. The
file is opened without blocking, must be a regular file (or "-", stdin), and is refused with
one line when it is larger than what the caller can hold."""
from __future__ import annotations

import os
import stat
import sys

from inspector.atomic_write import file_kind


class InputError(Exception):
    """A file we refuse to read, or could not; the message is one line naming it."""


def read_input(path: str, limit: int, what: str) -> bytes:
    """The bytes of `path` ("-": stdin), at most `limit` of them; `what` names the expected
    content in messages ("snapshot", "ioping log")."""
    too_big = f"over the {_size(limit)} a {what} can be"
    if path == "-":
        try:            # a pipe or a terminal; stdin redirected from a directory fails here
            data = sys.stdin.buffer.read(limit + 1)
        except OSError as exc:
            raise InputError(f"stdin: {exc.strerror or exc}") from None
    else:
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
                raise InputError(f"{path}: {st.st_size} bytes, {too_big}")
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as f:
            try:
                data = f.read(limit + 1)           # it may have grown since fstat
            except OSError as exc:
                raise InputError(f"{path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(f"{path}: {too_big}")
    return data


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"
