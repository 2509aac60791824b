"""`top --db --from HH:MM --to HH:MM:SS`: a time of day is the most recent such time not after
now, for both ends alike. Before, each was placed before the last sample, so a --to after it
(17:28:30 with the last sample at 17:28:24) fell on the day before its --from: "--from
2026-11-28 17:26:00 is after --to 2026-11-27 17:28:30"."""
from __future__ import annotations

import json
import time

from conftest import run_bin
from inspector.live import rates
from inspector.record.history import HistoryDB, local_offset
from inspector.record.store import SampleWriter
from synthetic import START, SyntheticHost


def _clock(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


def test_a_to_after_the_last_sample_is_today_not_the_day_before(tmp_path):
    now = time.time()
    path = str(tmp_path / "h.sqlite")
    host = SyntheticHost(disks=1, nics=1)
    first = now - 130 - START               # the synthetic host's clock runs from START
    with HistoryDB(path) as db:
        writer = SampleWriter(db.conn)
        prev = host.snapshot(first)
        for i in range(1, 12):              # 10 s intervals; the last ended 20 s ago
            cur = host.snapshot(first + i * 10)
            with db.writing("test"):
                writer.append(prev, cur, rates(prev, cur), local_offset(now))
            prev = cur
    res = run_bin("top", "--db", path, "--json", "--from", _clock(now - 125),
                  "--to", _clock(now - 5))
    assert res.returncode == 0, res.stderr
    walls = [json.loads(line)["wall"] for line in res.stdout.splitlines()]
    assert [round(w - now) for w in walls] == list(range(-120, -19, 10))
    # a time of day after now is yesterday's, at either end: nothing recorded then
    res = run_bin("top", "--db", path, "--from", _clock(now + 3600), "--to", _clock(now + 3660))
    assert res.returncode == 1 and "no recorded interval" in res.stderr, res.stderr
