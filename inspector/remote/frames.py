"""The live loop's framing, read and checked: what the host prints for one request is

    @@frame SEQ
    /proc/stat:cpu  4705 150 1120 ...          (grep's PATH:LINE, every line of every file)
    /proc/12/stat:12 (kworker/0:1) I ...
    @@end SEQ

grep prefixes every line with the file it came from, so no file's content can forge a frame
or another file's lines: a process named "\\n@@end 7" still sits behind its own path. Lines
that are neither are the stream going wrong (a shell that prints something else): counted,
and the stream refused past a few. Everything is bounded: a line, a frame, the files in it,
and the time waited.
"""
from __future__ import annotations

import os
import re
import select
import time
from dataclasses import dataclass, field

MAX_LINE = 1 << 20               # longer than any /proc line Inspector reads
MAX_FRAME_BYTES = 64 << 20       # 20,000 processes are ~15 MB
MAX_FILES = 400_000
MAX_GARBAGE_LINES = 64
_PATH = re.compile(rb"^/(proc|sys)/[^:]{1,512}$")


class StreamError(Exception):
    """The stream cannot go on (closed, garbled, too big); str() is the reason."""


class StreamTimeout(StreamError):
    """No whole frame in time: the host (or the link) is slow; the stream may recover."""


@dataclass
class Frame:
    seq: int
    files: dict[str, bytes] = field(default_factory=dict)   # "proc/stat" -> content
    size: int = 0


class FrameReader:
    """Frames from a file descriptor (ssh's stdout), read in chunks as they come."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buffer = bytearray()
        self._pos = 0                # lines before it are read (no copy per line)
        self._eof = False
        self.garbage = 0
        self.received = 0

    def read_line(self, deadline: float) -> bytes:
        """One line without its newline; StreamTimeout past `deadline` (time.monotonic())."""
        while True:
            end = self._buffer.find(b"\n", self._pos)
            if end >= 0:
                line = bytes(self._buffer[self._pos:end])
                self._pos = end + 1
                return line
            del self._buffer[:self._pos]
            self._pos = 0
            if len(self._buffer) > MAX_LINE:
                raise StreamError(f"a line over {MAX_LINE} bytes")
            if self._eof:
                raise StreamError("the connection closed")
            left = deadline - time.monotonic()
            if left <= 0:
                raise StreamTimeout("no answer in time")
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                raise StreamTimeout("no answer in time")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                self._eof = True
            self.received += len(chunk)
            self._buffer += chunk

    def hello(self, deadline: float) -> list[bytes]:
        """The loop's first line, `@@inspector-live VERSION WALL`: its words."""
        while True:
            line = self.read_line(deadline)
            if line.startswith(b"@@inspector-live "):
                return line.split()[1:]
            self._count_garbage(line)

    def frame(self, seq: int, deadline: float) -> Frame:
        """The frame answering request `seq`; earlier frames (answers to requests given up
        on) are skipped whole."""
        start = b"@@frame %d" % seq
        while True:
            line = self.read_line(deadline)
            if line == start:
                return self._body(seq, deadline)
            if not line.startswith(b"@@") and not _PATH.match(line.partition(b":")[0]):
                self._count_garbage(line)

    def _body(self, seq: int, deadline: float) -> Frame:
        frame = Frame(seq)
        parts: dict[str, list[bytes]] = {}
        end = b"@@end %d" % seq
        while True:
            line = self.read_line(deadline)
            if line == end:
                break
            path, sep, content = line.partition(b":")
            if not sep or not _PATH.match(path):
                self._count_garbage(line)
                continue
            frame.size += len(line) + 1
            if frame.size > MAX_FRAME_BYTES:
                raise StreamError(f"a frame over {MAX_FRAME_BYTES >> 20} MiB")
            key = path[1:].decode("utf-8", "surrogateescape")
            if key not in parts:
                if len(parts) >= MAX_FILES:
                    raise StreamError(f"a frame of more than {MAX_FILES} files")
                parts[key] = []
            parts[key].append(content)
        for key, lines in parts.items():
            data = b"\n".join(lines)
            # grep ends every line; files that end without a newline are those below
            frame.files[key] = data if key.endswith(("/cmdline", "/wchan")) else data + b"\n"
        return frame

    def _count_garbage(self, line: bytes) -> None:
        self.garbage += 1
        if self.garbage > MAX_GARBAGE_LINES:
            raise StreamError(f"not Inspector's live stream (unexpected line "
                              f"{line[:60].decode('ascii', 'replace')!r})")
