"""ioping log import: the shared sample, generated logs with an hour-of-day pattern, malformed
blocks, time zones, 0.x and raw forms; and the hour-of-day table that recovers the pattern."""
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given, settings, strategies as st

from conftest import FIXTURES, run_cli
from inspector.history import HistoryDB, aggregate
from inspector.ioping_log import parse_date, parse_ioping_log

SAMPLE = FIXTURES / "samples/ioping/periodic-log.txt"


def test_shared_sample():
    log = parse_ioping_log(SAMPLE.read_text())
    assert not log.problems and not log.warnings
    a, b = log.runs
    assert a.target == "/" and a.requests == 8170 and a.iops == 2770 and a.duration_s == 3.0
    assert (a.min_us, a.avg_us, a.max_us, a.mdev_us) == (99, 360, 143_700, 3_140)
    assert b.requests == 671 and b.avg_us == 4460 and abs(b.bytes_per_s - 896.6 * 1024) < 1
    # JST is UTC+9: 08:00:01 JST == 23:00:01 UTC the day before
    assert a.tz_offset_s == 9 * 3600
    assert datetime.fromtimestamp(a.timestamp, timezone.utc) == datetime(2015, 2, 14, 23, 0, 1, tzinfo=timezone.utc)


def test_dates_and_zones():
    ts, off, warn = parse_date("2015-02-15T08:00:01+09:00")
    assert off == 32400 and warn is None
    assert parse_date("Sun Feb 15 08:00:01 JST 2015")[0] == ts
    assert parse_date("Sat Feb 14 23:00:01 UTC 2015")[0] == ts
    assert parse_date("Sun, 15 Feb 2015 08:00:01 +0900")[0] == ts
    ts2, off2, warn2 = parse_date("Sun Feb 15 08:00:01 XYZ 2015")
    assert off2 == 0 and "unknown time zone" in warn2


def test_forms_and_malformed_blocks():
    text = "\n".join([
        "## Sun Feb 15 08:00:01 UTC 2015",
        "19 850392 22343 91515442 38160 44757 75990 9672 20 973731",       # 1.x -B
        "## Sun Feb 15 09:00:01 UTC 2015",
        "--- . (ext4 /dev/sda3) ioping statistics ---",                     # 0.x human
        "10 requests completed in 9006.4 ms, 357 iops, 1.4 mb/s",
        "min/avg/max/mdev = 0.2/2.8/12.7/5.0 ms",
        "## Sun Feb 15 10:00:01 UTC 2015",
        "min/avg/max/mdev = 1 us / 2 us",                                   # truncated
        "## not a date at all",
        "1 2 3",
        "## Sun Feb 15 11:00:01 UTC 2015",
        "10 9000 1111 4551111 500 900 2000 300",                            # 0.x -B (usec)
        "## Sun Feb 15 12:00:01 UTC 2015",
        "10 1000000 10000 40960000 50000 100000 150000 10000 10 1000000",   # -p periods
        "30 9000000 3333 13653333 200000 300000 400000 50000 30 9000000",
    ])
    log = parse_ioping_log(text)
    assert [r.form for r in log.runs] == ["raw-1.x", "0.x", "raw-0.x", "raw-1.x"]
    assert [p.line for p in log.problems] == [7, 9]
    assert log.runs[0].requests == 19 and abs(log.runs[0].avg_us - 44.757) < 1e-9
    assert log.runs[1].avg_us == 2800 and log.runs[1].target == "."
    assert log.runs[2].avg_us == 900
    merged = log.runs[3]
    assert merged.requests == 40 and abs(merged.avg_us - 250) < 1e-6
    assert merged.min_us == 50 and merged.max_us == 400


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("## 0123456789.kKMiBsumn/=-:,abcdefgioprqtv\n")), max_size=400))
def test_arbitrary_input_never_raises(text):
    log = parse_ioping_log(text)
    assert all(p.line >= 1 for p in log.problems)


def generated_log(days: int = 14, seed: int = 1) -> tuple[str, dict[int, float]]:
    """Every 5 minutes for two weeks, slow (10x latency) from 03:00 to 08:00 local (UTC+9)."""
    rng = random.Random(seed)
    tz = timezone(timedelta(hours=9))
    start = datetime(2015, 2, 1, tzinfo=tz)
    lines, expected = [], {}
    for i in range(days * 24 * 12):
        t = start + timedelta(minutes=5 * i)
        slow = 3 <= t.hour < 8
        avg = rng.gauss(4000 if slow else 400, 40 if slow else 4)
        expected[t.hour] = 4000 if slow else 400
        iops = 1e6 / avg
        lines += [f"## {t.strftime('%a %b %d %H:%M:%S')} JST {t.year}",
                  "--- /data (ext4 /dev/vdb1) ioping statistics ---",
                  f"{int(3e6 / avg)} requests completed in 3.00 s, {iops:.0f} iops, {iops * 4 / 1024:.1f} MiB/s",
                  f"min/avg/max/mdev = 99 us / {avg:.0f} us / 143.7 ms / 3.14 ms"]
    return "\n".join(lines) + "\n", expected


def test_import_recovers_hour_of_day_pattern(tmp_path):
    text, expected = generated_log()
    log_path = tmp_path / "ioping.log"
    log_path.write_text(text)
    db = tmp_path / "h.sqlite"
    res = run_cli("history", "import-ioping", str(log_path), "--db", str(db))
    assert res.status == 0, res.err
    assert "imported 4032 runs" in res.err
    with HistoryDB(str(db)) as h:
        hours = aggregate(h.runs("io", "/data"), "hour")
    assert len(hours) == 24
    for b in hours:
        assert b.runs == 14 * 12
        assert abs(b.lat_mean_us - expected[int(b.key)]) < expected[int(b.key)] * 0.02, b
    slow = {int(b.key) for b in hours if b.lat_mean_us > 1000}
    assert slow == {3, 4, 5, 6, 7}
    out = run_cli("history", "--db", str(db), "--by", "day", "--json")
    days = out.json()["series"]["io:/data"]
    assert len(days) == 14 and all(d["runs"] == 288 for d in days)


def test_import_reports_malformed_with_line_numbers(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text(SAMPLE.read_text() + "## Mon Feb 16 08:00:01 JST 2015\nnonsense line\n")
    res = run_cli("history", "import-ioping", str(bad), "--db", str(tmp_path / "h.sqlite"))
    assert res.status == 0
    assert f"{bad}:9: skipped: line 10: unrecognised ioping output" in res.err
    assert "imported 2 runs" in res.err
    res = run_cli("history", "import-ioping", str(tmp_path / "missing.log"), "--db", str(tmp_path / "h.sqlite"))
    assert res.status == 2 and "No such file" in res.err
