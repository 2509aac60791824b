"""OOM-kill victims from the kernel log: /dev/kmsg on the live host (root, or
kernel.dmesg_restrict=0), a plain file of kmsg records at dev/kmsg in a fixture tree.

Read only when /proc/vmstat's oom_kill went up, so a quiet host never reads the log. Lines
the kernel writes for a kill (mm/oom_kill.c): "Out of memory: Killed process 4321 (java)
total-vm:..." and, since 5.0, "oom-kill:constraint=...,task=java,pid=4321,uid=0".
"""
from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass

from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

KMSG_LIMIT = 1 << 20          # bytes read from the log per look
_KILLED = re.compile(r"(?:Out of memory|Memory cgroup out of memory): Killed process "
                     r"(?P<pid>\d+) \((?P<comm>[^)]*)\)(?P<rest>.*)")
_RSS = re.compile(r"anon-rss:(\d+)kB")


@dataclass(slots=True)
class OomVictim:
    pid: int
    comm: str
    rss_kib: int | None
    cgroup: bool            # killed by a memory cgroup's limit, not the whole machine's
    seq: int                # the record's sequence number (kmsg), for "new since"


def parse_kmsg(text: str) -> list[OomVictim]:
    out: list[OomVictim] = []
    for line in text.splitlines():
        head, sep, message = line.partition(";")
        if not sep:
            head, message = "", line
        match = _KILLED.search(message)
        if not match:
            continue
        try:
            seq = int(head.split(",")[1]) if head else len(out)
        except (IndexError, ValueError):
            seq = len(out)
        rss = _RSS.search(match["rest"])
        out.append(OomVictim(int(match["pid"]), match["comm"],
                             int(rss.group(1)) if rss else None,
                             message.startswith("Memory cgroup"), seq))
    return out


def read_oom_victims(root: HostRoot) -> list[OomVictim] | Unknown:
    """Every OOM kill the kernel log still holds, oldest first."""
    if not root.live or root.remote:     # a capture's copy; over ssh: not streamed
        try:
            return parse_kmsg(root.read_text("dev/kmsg", KMSG_LIMIT))
        except Unavailable as exc:
            return Unknown(f"kernel log: {exc.reason}")
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return Unknown(f"kernel log: /dev/kmsg {exc.strerror or exc}")
    chunks: list[bytes] = []
    size = 0
    try:
        while size < KMSG_LIMIT:
            try:
                record = os.read(fd, 8192)      # one record per read
            except OSError as exc:
                if exc.errno == errno.EPIPE:    # overwritten while we read: go on
                    continue
                break                           # EAGAIN: the end
            if not record:
                break
            chunks.append(record)
            size += len(record)
    finally:
        os.close(fd)
    return parse_kmsg(b"".join(chunks).decode("utf-8", "replace"))
