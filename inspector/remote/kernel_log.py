"""The kernel log of a host read over ssh, as inspector.live.kernel_log reads /dev/kmsg.

The live loop reads it only when asked (the host's oom_kill count rose): /dev/kmsg without
blocking (`dd iflag=nonblock`, one record per read, GNU dd), else `dmesg -r` (busybox too),
whose "<PRIO>[SECONDS] message" lines are put in kmsg's "PRIO,SEQ,USEC,-;message" form with
the microseconds as the sequence (dmesg prints none; time orders records as well, and, unlike a
line's place, does not shift when the ring drops old records).
"""
from __future__ import annotations

import re

_DMESG = re.compile(rb"^<(\d+)>\[\s*(\d+)\.(\d+)\]\s?(.*)$")


def as_kmsg(data: bytes) -> bytes:
    """`data` (kmsg records, or dmesg -r lines) as kmsg records."""
    out: list[bytes] = []
    for line in data.splitlines():
        match = _DMESG.match(line)
        if match is None:
            out.append(line)            # a kmsg record already (or its continuation line)
            continue
        prio, seconds, fraction, message = match.groups()
        usec = int(seconds) * 1_000_000 + int(fraction.ljust(6, b"0")[:6])
        out.append(b"%s,%d,%d,-;%s" % (prio, usec, usec, message))
    return b"\n".join(out) + (b"\n" if out else b"")
