"""`top` on a capture that holds one sample: the first line names the capture and when it was
taken, whatever its source text holds (a sosreport's says '(sos 4.0; partial: ...)': the
line was cut at that ';', and 'one sample taken ...' never printed)."""
from __future__ import annotations

import dataclasses

from inspector.live.sampler import since_boot
from inspector.live.text import format_single
from inspector.live.worker import unknown_counters
from inspector.roots.host import HostRoot

SOURCE = "sosreport /srv/sosreport-db1 (sos 4.0; partial: cpu: no proc/stat; lscpu kept)"


def test_the_note_keeps_the_whole_source_and_the_time_taken():
    snap = dataclasses.replace(unknown_counters(HostRoot("/"), "not in this capture"),
                               source=SOURCE, timed_out={})
    since = since_boot(snap)                  # uptime unknown: no averages since boot
    text = format_single(snap, since)
    first = text.splitlines()[0]
    assert first.startswith(f"capture {SOURCE}: one sample taken "), first
    assert first.endswith("; rates need two samples (uptime unknown, so no averages since "
                          "boot)."), first
