"""`top --db`, `history --samples` and the times they take: on a database written from a
synthetic host recorded at UTC+09:00, read on this machine (UTC or not). Reading never writes,
creates nothing beside the file and refuses what is not a history."""
from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import statistics

import pytest

from conftest import run_cli
from inspector.live import rates
from inspector.record.history import HistoryDB
from inspector.record.store import SampleWriter
from inspector.record.time_points import BadTime, parse_point
from synthetic import START, SyntheticHost

JST = 9 * 3600
STEP = 10.0


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[str, list]:
    """Two hours of 10 s intervals recorded at UTC+09:00, from 2025-03-14 00:00 UTC
    (09:00 on the host's clock), and the live rates of each."""
    path = str(tmp_path_factory.mktemp("replay") / "h.sqlite")
    host = SyntheticHost(disks=3, nics=2)
    live = []
    with HistoryDB(path) as db:
        writer = SampleWriter(db.conn)
        prev = host.snapshot(0.0)
        for i in range(1, 721):
            cur = host.snapshot(i * STEP)
            r = rates(prev, cur)
            with db.writing("test"):
                writer.append(prev, cur, r, JST)
            live.append(r)
            prev = cur
    return path, live


def _fingerprint(path: str) -> tuple:
    st = os.stat(path)
    with open(path, "rb") as f:
        return st.st_size, st.st_mtime_ns, hash(f.read())


def test_top_replays_a_period_on_the_recorded_clock(recorded):
    db, live = recorded
    # 09:30:00 to 09:31:00 JST is 00:30 to 00:31 UTC: intervals 180..186
    res = run_cli("top", "--db", db, "--json", "--from", "2025-03-14 09:30",
                  "--to", "2025-03-14 09:31")
    assert res.status == 0, res.err
    lines = [json.loads(line) for line in res.out.splitlines()]
    assert [round(d["wall"] - START) for d in lines] == list(range(1800, 1861, 10))
    assert all(d["kind"] == "inspector-top" and d["tz_offset_s"] == JST for d in lines)
    first = live[179]
    assert lines[0]["disks"][0]["util"] == pytest.approx(first.disks[0].util, rel=1e-6)
    # the same moment with its offset, and as a bare clock time (latest 09:30 in the recording)
    for since in ("2025-03-14T00:30:00Z", "2025-03-14T09:30:00+09:00", "09:30"):
        res = run_cli("top", "--db", db, "--json", "--from", since, "--count", "1")
        assert json.loads(res.out)["wall"] == START + 1800, since


def test_top_text_blocks_and_count(recorded):
    db, _ = recorded
    res = run_cli("top", "--db", db, "--count", "3", "--from", "10:59:50")
    assert res.status == 0, res.err
    blocks = res.out.split("\n\n")
    assert len(blocks) == 2          # the recording ends at 11:00:00 JST
    assert blocks[0].startswith("2025-03-14 10:59:50 UTC+09:00 recorded  interval 10.00 s")
    assert blocks[1].startswith("2025-03-14 11:00:00 UTC+09:00 recorded")
    res = run_cli("top", "--db", db, "--count", "3")
    assert len(res.out.split("\n\n")) == 3 and "09:00:10 UTC+09:00" in res.out


def test_nothing_in_the_period_and_mistakes(recorded, tmp_path):
    db, _ = recorded
    res = run_cli("top", "--db", db, "--from", "2025-03-15 03:00")
    assert res.status == 1 and "no recorded interval in that period" in res.err
    assert "recorded from 2025-03-14 09:00:10 UTC+09:00 to 2025-03-14 11:00:00" in res.err
    for argv, needle in ((("--from", "yesterday-ish"), "is not a time"),
                         (("--from", "10:00", "--to", "09:00"), "is after --to")):
        res = run_cli("top", "--db", db, *argv)
        assert res.status == 2 and needle in res.err, res.err
    res = run_cli("top", "--from", "09:00")
    assert res.status == 2 and "give its --db FILE" in res.err
    res = run_cli("top", "--db", str(tmp_path / "missing.sqlite"))
    assert res.status == 2 and "no such history database" in res.err
    assert not (tmp_path / "missing.sqlite").exists()


def test_reading_writes_nothing_and_refuses_foreign_files(recorded, tmp_path):
    db, _ = recorded
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = _fingerprint(db)
    beside = sorted(os.listdir(os.path.dirname(db)))
    for argv in (("top", "--db", db, "--count", "2"), ("history", "--db", db, "--samples"),
                 ("history", "--db", db, "--samples", "--by", "day", "--json")):
        assert run_cli(*argv).status == 0
    assert _fingerprint(db) == before and sorted(os.listdir(os.path.dirname(db))) == beside

    foreign = tmp_path / "app.sqlite"
    c = sqlite3.connect(foreign)
    c.execute("CREATE TABLE users (name TEXT)")
    c.commit()
    c.close()
    mark = _fingerprint(str(foreign))
    for foreign_argv in (("top", "--db", str(foreign)),
                         ("history", "--db", str(foreign), "--samples")):
        res = run_cli(*foreign_argv)
        assert res.status == 2 and "not a usable history database" in res.err, res.err
    assert _fingerprint(str(foreign)) == mark and os.listdir(tmp_path) == ["app.sqlite"]


def test_a_history_from_before_samples_reads_as_none_recorded(tmp_path):
    """A database of an older Inspector (no sample tables) is read as it is: no schema added."""
    db = str(tmp_path / "old.sqlite")
    conn = sqlite3.connect(db)
    conn.executescript("""CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE probe_runs (id INTEGER PRIMARY KEY, ts REAL, tz_offset_s INTEGER,
            host TEXT, probe TEXT, target TEXT, source TEXT, requests INTEGER,
            duration_s REAL, ops_per_s REAL, bytes_per_s REAL, lat_min_us REAL,
            lat_avg_us REAL, lat_max_us REAL, lat_mdev_us REAL, lat_p99_us REAL, error TEXT,
            detail TEXT);
        CREATE TABLE checks (id INTEGER PRIMARY KEY, ts REAL, tz_offset_s INTEGER, host TEXT,
            worst TEXT, findings TEXT);""")
    conn.close()
    before = _fingerprint(db)
    res = run_cli("top", "--db", db)
    assert res.status == 1 and "no recorded samples" in res.err
    res = run_cli("history", "--db", db, "--samples", "--json")
    assert res.status == 1 and res.json()["cpu"] == [] and res.json()["disks"] == {}
    assert _fingerprint(db) == before and os.listdir(tmp_path) == ["old.sqlite"]


def test_history_samples_by_hour_equals_the_figures_replayed(recorded):
    """Each bucket's mean ±sd is that of the replayed intervals of its hour (JST clock)."""
    db, live = recorded
    res = run_cli("history", "--db", db, "--samples", "--json")
    assert res.status == 0, res.err
    doc = res.json()
    assert doc["kind"] == "inspector-history-samples" and doc["utc_offsets_s"] == [JST]
    hours: dict[str, list] = {}
    for r in live:
        hour = f"{dt.datetime.fromtimestamp(r.wall + JST, dt.UTC).hour:02d}"
        hours.setdefault(hour, []).append(r)
    assert [b["key"] for b in doc["cpu"]] == sorted(hours) == ["09", "10", "11"]
    for bucket in doc["cpu"]:
        rows = hours[bucket["key"]]
        assert bucket["intervals"] == len(rows)
        steal = [r.cpu.overall.steal for r in rows]
        assert bucket["steal"]["mean"] == pytest.approx(statistics.fmean(steal))
        if len(rows) > 1:
            assert bucket["steal"]["stdev"] == pytest.approx(statistics.stdev(steal))
        assert bucket["steal"]["max"] == pytest.approx(max(steal))
    for name, buckets in doc["disks"].items():
        for bucket in buckets:
            rows = [next(d for d in r.disks if d.name == name) for r in hours[bucket["key"]]]
            util = [d.util for d in rows]
            assert bucket["util"]["mean"] == pytest.approx(statistics.fmean(util)), name
            waits = [(d.r_s * d.r_await + d.w_s * d.w_await) / (d.r_s + d.w_s)
                     for d in rows if d.r_s + d.w_s]
            assert bucket["await_ms"]["mean"] == pytest.approx(statistics.fmean(waits))
            assert bucket["iops"]["mean"] == pytest.approx(
                statistics.fmean(d.r_s + d.w_s for d in rows))
    text = run_cli("history", "--db", db, "--samples", "--disk", "sda").out
    assert "CPU: by hour of day" in text and "sda: by hour" in text and "sdb" not in text
    assert "recorded at UTC+09:00" in text


def test_time_forms():
    jst = lambda ts: JST           # noqa: E731
    latest = START + 7200         # 11:00 JST
    now = START + 10_000
    assert parse_point("09:30", offset_near=jst, latest=latest, now=now) == START + 1800
    # a clock time is the most recent not after now, even past the end of the recording
    # (issue 28: a --to after the last sample fell on the day before its --from)
    assert parse_point("11:30", offset_near=jst, latest=latest, now=now) == START + 9000
    assert parse_point("12:00", offset_near=jst, latest=latest, now=now) == START + 10800 - 86400
    assert parse_point("2h ago", offset_near=jst, latest=latest, now=now) == now - 7200
    assert parse_point("@1741910400", offset_near=jst, latest=latest, now=now) == START
    assert parse_point("now", offset_near=jst, latest=latest, now=now) == now
    assert parse_point("2025-03-14", offset_near=jst, latest=latest, now=now) == START - JST
    for bad in ("", "soon", "25:00", "@x", "2h hence", "2025-13-01"):
        with pytest.raises(BadTime):
            parse_point(bad, offset_near=jst, latest=latest, now=now)
    # across a DST change: the offset in effect at the moment named
    cet = lambda ts: 3600 if ts < START else 7200      # noqa: E731
    assert parse_point("2025-03-14 03:00", offset_near=cet, latest=latest, now=now) == \
        START + 3 * 3600 - 7200
    assert parse_point("2025-03-13 23:00", offset_near=cet, latest=latest, now=now) == \
        START - 3600 - 3600
    # just after the change: 02:30 at UTC+02:00 is 00:30 UTC
    assert parse_point("2025-03-14 02:30", offset_near=cet, latest=latest, now=now) == \
        START + 1800
