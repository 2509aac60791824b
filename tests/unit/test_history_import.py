"""History: importing the same ioping log twice adds nothing (B8); the hour-of-day table puts
every run in the hour of its own local clock, whatever zone it was logged in (B9)."""
import sqlite3
from datetime import UTC, datetime, timedelta

from conftest import run_cli
from inspector.record.history import HistoryDB, ProbeRun


def _ioping_block(when: datetime, zone: str, avg_us: int) -> list[str]:
    iops = 1e6 / avg_us
    return [f"## {when.strftime('%a %b %d %H:%M:%S')} {zone} {when.year}",
            "--- /data (ext4 /dev/vdb1) ioping statistics ---",
            f"10 requests completed in 3.00 s, {iops:.0f} iops, {iops * 4 / 1024:.1f} MiB/s",
            f"min/avg/max/mdev = 99 us / {avg_us} us / 143.7 ms / 3.14 ms"]


def _jst_log(path, hours=(3, 12), days=2) -> int:
    lines, n = [], 0
    for day in range(days):
        for hour in hours:
            when = datetime(2015, 2, 14 + day, hour, 0, 1)
            lines += _ioping_block(when, "JST", 4000 if hour == 3 else 400)
            n += 1
    path.write_text("\n".join(lines) + "\n")
    return n


def test_importing_the_same_log_twice_adds_nothing(tmp_path):
    log, db = tmp_path / "ioping.log", tmp_path / "h.sqlite"
    n = _jst_log(log)
    first = run_cli("history", "import-ioping", str(log), "--db", str(db))
    assert first.status == 0, first.err
    assert f"{n} new, 0 already present" in first.err
    second = run_cli("history", "import-ioping", str(log), "--db", str(db))
    assert second.status == 0, second.err
    assert f"0 new, {n} already present" in second.err
    with HistoryDB(str(db)) as h:
        assert len(h.runs("io", "/data")) == n


def test_a_database_with_old_duplicates_is_deduplicated_on_open(tmp_path):
    db = tmp_path / "old.sqlite"
    with HistoryDB(str(db)) as h:
        h.conn.execute("DROP INDEX probe_runs_unique")        # as written before the rule
        for _ in range(3):
            h.conn.execute("INSERT INTO probe_runs (ts, tz_offset_s, probe, target, source) "
                           "VALUES (100.0, 0, 'io', '/x', 'import-ioping')")
    with HistoryDB(str(db)) as h:
        assert len(h.runs("io", "/x")) == 1
        assert h.add_runs([ProbeRun(ts=100.0, probe="io", target="/x", source="import-ioping")]) == 0
        assert h.add_runs([ProbeRun(ts=100.0, probe="io", target="/x", source="record")]) == 1
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_hour_of_day_uses_each_runs_own_local_time(tmp_path, monkeypatch):
    """03:00 JST runs (18:00 UTC) and 03:00 UTC runs are both "03"; a JST noon run is "12"."""
    log, db = tmp_path / "jst.log", tmp_path / "h.sqlite"
    _jst_log(log)
    assert run_cli("history", "import-ioping", str(log), "--db", str(db), "--target", "/data").status == 0
    utc_runs = [ProbeRun(ts=datetime(2015, 2, 20, 3, 0, 1, tzinfo=UTC).timestamp()
                         + timedelta(days=d).total_seconds(),
                         probe="io", target="/data", source="record", tz_offset_s=0,
                         lat_avg_us=4000.0, ops_per_s=250.0) for d in range(2)]
    with HistoryDB(str(db)) as h:
        assert h.add_runs(utc_runs) == 2
    res = run_cli("history", "--db", str(db), "--json")
    assert res.status == 0, res.err
    doc = res.json()
    assert doc["time_basis"].startswith("local time of each run")
    assert doc["utc_offsets_s"]["io:/data"] == [0, 9 * 3600]
    hours = {b["key"]: b for b in doc["series"]["io:/data"]}
    assert set(hours) == {"03", "12"}            # nothing at 18 (03 JST in UTC)
    assert hours["03"]["runs"] == 4 and abs(hours["03"]["lat_mean_us"] - 4000) < 1
    assert hours["12"]["runs"] == 2 and abs(hours["12"]["lat_mean_us"] - 400) < 1
    monkeypatch.setenv("COLUMNS", "120")
    text = run_cli("history", "--db", str(db)).out
    assert "hour of day, local time of each run" in text
    assert "UTC+00:00, UTC+09:00" in text
