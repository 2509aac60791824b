"""ioping logs as cron writes them: two weeks of 5-minute runs whose date lines real `date`
printed in each form (bare in a locale, `#`/`##` prefixed, -Is, -R, +%s), with ioping 0.x and
1.x outputs (default, -R, -B, -p) in turn, import fully and give the right hour-of-day table
of latency and throughput; real ioping output of each kind; unreadable lines reported by line
number with the rest kept; ambiguous zones refused until --tz names them; property-based
tests of the block parser."""
from __future__ import annotations

import random
import subprocess
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, inspector_bin, run_cli
from inspector.record.history import HistoryDB, aggregate
from inspector.record.ioping_log import parse_ioping_log
from inspector.record.log_dates import ZoneRules
from locale_data import date_lines

SAMPLES = FIXTURES / "samples/ioping"
SAMPLE = SAMPLES / "periodic-log.txt"
RUNS = 14 * 24 * 12                     # two weeks every 5 minutes
SLOW_HOURS = set(range(3, 8))            # "slow every night from 3 to 8", local time
MIB = 1 << 20


def test_shared_sample():
    log = parse_ioping_log(SAMPLE.read_text())
    assert not log.problems and not log.warnings
    a, b = log.runs
    assert a.target == "/" and a.requests == 8170 and a.iops == 2770 and a.duration_s == 3.0
    assert (a.min_us, a.avg_us, a.max_us, a.mdev_us) == (99, 360, 143_700, 3_140)
    assert b.requests == 671 and b.avg_us == 4460 and b.bytes_per_s is not None
    assert abs(b.bytes_per_s - 896.6 * 1024) < 1
    # JST is UTC+9: 08:00:01 JST == 23:00:01 UTC the day before
    assert a.tz_offset_s == 9 * 3600 and a.date_form == "C"
    assert datetime.fromtimestamp(a.timestamp, UTC) == datetime(2015, 2, 14, 23, 0, 1, tzinfo=UTC)


# ------------------------------------------------------------------ ioping's outputs
def _t(us: float) -> str:
    """ioping 1.x's human time."""
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} us"


def ioping_block(form: str, avg: float, target: str = "/data") -> list[str]:
    """What ioping printed for a run whose mean latency is `avg` us (4 KiB requests)."""
    iops, n = 1e6 / avg, int(3e6 / avg)
    mib = iops * 4096 / MIB
    mn, mx, mdev = avg * 0.5, avg * 3, avg * 0.1
    head = f"--- {target} (ext4 /dev/vdb1 100 GiB) ioping statistics ---"
    minmax = f"min/avg/max/mdev = {_t(mn)} / {_t(avg)} / {_t(mx)} / {_t(mdev)}"
    if form == "1.x":
        return [f"4 KiB <<< {target} (ext4 /dev/vdb1 100 GiB): request={i} time={_t(avg)}"
                + (" (warmup)" if i == 1 else "") for i in (1, 2, 3)] + [
            "", head,
            f"{n} requests completed in 3.00 s, {n * 4 / 1024:.1f} MiB read, {iops:.0f} iops, "
            f"{mib:.1f} MiB/s",
            f"generated {n + 1} requests in 3.10 s, {n * 4 / 1024:.1f} MiB, {iops * 0.95:.0f} "
            f"iops, {mib * 0.95:.1f} MiB/s", minmax]
    if form == "1.x -R":
        return ["", head,
                f"{n / 1000:.1f} k requests completed in 2.96 s, {mib * 2.96:.1f} MiB read, "
                f"{iops / 1000:.2f} k iops, {mib:.2f} MiB/s",
                f"generated {n / 1000:.1f} k requests in 3.00 s, {mib * 2.96:.1f} MiB, "
                f"{iops / 1000 * 0.98:.2f} k iops, {mib * 0.98:.2f} MiB/s", minmax]
    if form == "1.x -B":
        return [f"{n} {int(n * avg * 1000)} {int(iops)} {int(iops * 4096)} {int(mn * 1000)} "
                f"{int(avg * 1000)} {int(mx * 1000)} {int(mdev * 1000)} {n + 1} {int(3.1e9)}"]
    if form == "1.x -p":       # -p N -q: one raw line per period, no summary
        third = n // 3
        return [f"{third} {int(third * avg * 1000)} {int(iops)} {int(iops * 4096)} "
                f"{int(mn * 1000)} {int(avg * 1000)} {int(mx * 1000)} {int(mdev * 1000)} "
                f"{third} {int(third * avg * 1000)}" for _ in range(3)]
    if form == "0.x":
        return [f"4096 bytes from {target} (ext4 /dev/vdb1): request={i} time={avg / 1000:.1f} ms"
                for i in (1, 2)] + [
            "", f"--- {target} (ext4 /dev/vdb1) ioping statistics ---",
            f"{n} requests completed in 3000.4 ms, {iops:.0f} iops, {mib:.1f} mb/s",
            f"min/avg/max/mdev = {mn / 1000:.1f}/{avg / 1000:.1f}/{mx / 1000:.1f}/"
            f"{mdev / 1000:.1f} ms"]
    if form == "0.x -p":
        return [f"{n} {n * avg:.0f} {iops:.0f} {iops * 4096:.0f} {mn:.0f} {avg:.0f} {mx:.0f} "
                f"{mdev:.0f}"]
    raise ValueError(form)


OUTPUTS = ["1.x", "1.x -R", "1.x -B", "1.x -p", "0.x", "0.x -p"]

# name: (locale, zone, prefix, date arguments, --tz)
DATE_FORMS = {
    "C": ("C", "Asia/Tokyo", "", (), []),
    "C ##": ("C", "Asia/Tokyo", "## ", (), []),
    "C # across DST": ("C", "Europe/Berlin", "# ", (), []),
    "ja_JP": ("ja_JP", "Asia/Tokyo", "", (), []),
    "de_DE across DST": ("de_DE", "Europe/Berlin", "", (), []),
    "fr_FR": ("fr_FR", "Europe/Paris", "", (), []),
    "zh_CN CST named": ("zh_CN", "Asia/Shanghai", "", (), ["CST=+08:00"]),
    "ko_KR": ("ko_KR", "Asia/Seoul", "", (), []),
    "en_US AM/PM across DST": ("en_US", "America/New_York", "", (), []),
    "fi_FI numeric": ("fi_FI", "Europe/Helsinki", "", (), []),
    "ru_RU": ("ru_RU", "Europe/Moscow", "# ", (), []),
    "date -Is": ("C", "Asia/Kolkata", "", ("-Is",), []),
    "date -R": ("C", "America/Los_Angeles", "## ", ("-R",), []),
    "date +%s": ("C", "Asia/Tokyo", "", ("+%s",), ["Asia/Tokyo"]),
}


def generated_log(form: str, locpath, seed: int = 1):
    """Two weeks of runs every 5 minutes, 10x slower from 03:00 to 08:00 local time; the
    date lines as `date` printed them; ioping's output forms in turn. Returns the text, the
    zone and the runs' instants."""
    locale, zone, prefix, args, _ = DATE_FORMS[form]
    start = 1427328000 if zone.startswith("Europe") else 1425168000   # Mar 26 / Mar 1 2015
    instants = [start + 300 * i + 1 for i in range(RUNS)]
    dates = date_lines(locale, zone, instants, locpath, args)
    rng = random.Random(seed)
    lines = []
    for i, (ts, date) in enumerate(zip(instants, dates)):
        hour = datetime.fromtimestamp(ts, ZoneInfo(zone)).hour
        avg = rng.gauss(4000 if hour in SLOW_HOURS else 400, 20 if hour in SLOW_HOURS else 2)
        lines += [prefix + date, *ioping_block(OUTPUTS[i % len(OUTPUTS)], avg)]
    return "\n".join(lines) + "\n", zone, instants


def rows_of(log) -> list[dict]:
    return [{"ts": r.timestamp, "tz_offset_s": r.tz_offset_s, "error": None,
             "ops_per_s": r.iops, "lat_avg_us": r.avg_us, "lat_p99_us": None,
             "bytes_per_s": r.bytes_per_s, "detail": None} for r in log.runs]


@pytest.mark.parametrize("form", list(DATE_FORMS))
def test_two_weeks_of_cron_runs_import_fully_with_their_hour_of_day(glibc_locales, form):
    text, zone, instants = generated_log(form, glibc_locales)
    log = parse_ioping_log(text, ZoneRules.parse(DATE_FORMS[form][4]))
    assert log.problems == [] and log.warnings == []
    assert len(log.runs) == RUNS
    assert [round(r.timestamp) for r in log.runs] == instants
    hours = aggregate(rows_of(log), "hour")
    want_runs: dict[int, int] = {}
    for ts in instants:
        h = datetime.fromtimestamp(ts, ZoneInfo(zone)).hour
        want_runs[h] = want_runs.get(h, 0) + 1
    assert {int(b.key): b.runs for b in hours} == want_runs
    for b in hours:
        slow = int(b.key) in SLOW_HOURS
        assert b.lat_mean_us == pytest.approx(4000 if slow else 400, rel=0.02), (form, b)
        mib_s = 4096 * 1e6 / (4000 if slow else 400) / MIB
        assert b.mib_s_mean == pytest.approx(mib_s, rel=0.05), (form, b)
        assert b.mib_s_stdev is not None and b.mib_s_stdev < 0.1 * mib_s
    days = aggregate(rows_of(log), "day")
    assert sum(d.runs for d in days) == RUNS and len(days) in (14, 15)


def test_cli_refuses_an_ambiguous_zone_until_tz_names_it(glibc_locales, tmp_path):
    text, _, _ = generated_log("zh_CN CST named", glibc_locales)
    path, db = tmp_path / "ioping.log", tmp_path / "h.sqlite"
    path.write_text(text)
    res = run_cli("history", "import-ioping", str(path), "--db", str(db))
    assert res.status == 1, res.err
    first = res.err.splitlines()[0]
    assert first.startswith(f"{path}:1: skipped: time zone CST is ambiguous (China +08:00, "
                            "US Central -06:00 or Cuba -05:00): say which with --tz CST="), first
    assert "imported 0 runs" in res.err
    res = run_cli("history", "import-ioping", str(path), "--db", str(db), "--tz", "CST=Asia/Shanghai")
    assert res.status == 0, res.err
    assert f"imported {RUNS} runs" in res.err and "skipped" not in res.err
    doc = run_cli("history", "--db", str(db), "--json").json()
    hours = {b["key"]: b for b in doc["series"]["io:/data"]}
    assert len(hours) == 24 and doc["utc_offsets_s"]["io:/data"] == [8 * 3600]
    assert hours["04"]["mib_s_mean"] == pytest.approx(0.98, rel=0.05)
    assert hours["12"]["mib_s_mean"] == pytest.approx(9.77, rel=0.05)
    assert hours["12"]["lat_mean_us"] == pytest.approx(400, rel=0.02)
    text = run_cli("history", "--db", str(db), "--by", "hour").out
    assert "MiB/s" in text and "mean ±sd" in text
    for bad in (["--tz", "CST"], ["--tz", "CST=+99:00"], ["--tz", "X=Nowhere/City"]):
        res = run_cli("history", "import-ioping", str(path), "--db", str(db), *bad)
        assert res.status == 2 and res.err.count("\n") == 1 and "--tz" in res.err, res.err


def test_bare_locale_dates_through_stdin(glibc_locales, tmp_path):
    text, _, _ = generated_log("ja_JP", glibc_locales)
    db = tmp_path / "h.sqlite"
    proc = subprocess.run([inspector_bin(), "history", "import-ioping", "-", "--db", str(db)],
                          input=text, capture_output=True, text=True)
    assert proc.returncode == 0 and f"imported {RUNS} runs" in proc.stderr, proc.stderr
    with HistoryDB(str(db), create=False) as h:
        hours = aggregate(h.runs("io", "/data"), "hour")
    assert all(b.lat_mean_us is not None for b in hours)
    assert {int(b.key) for b in hours if (b.lat_mean_us or 0) > 1000} == SLOW_HOURS


def test_real_ioping_output_of_each_kind(glibc_locales, tmp_path):
    """The installed ioping, run now, between bare ja_JP date lines."""
    runs = [["-c", "3", "-i", "0"], ["-R", "-w", "0.2"], ["-B", "-c", "3", "-i", "0"],
            ["-p", "2", "-c", "6", "-i", "0"], ["-p", "2", "-c", "6", "-i", "0", "-q"],
            ["-R", "-w", "0.2", "-B"]]
    dates = date_lines("ja_JP", "Asia/Tokyo", [1423954801 + 300 * i for i in range(len(runs))],
                       glibc_locales)
    text = ""
    outputs = []
    for date, args in zip(dates, runs):
        out = subprocess.run(["ioping", *args, str(tmp_path)], capture_output=True, text=True,
                             check=True).stdout
        outputs.append(out)
        text += date + "\n" + out
    log = parse_ioping_log(text)
    assert log.problems == [] and len(log.runs) == len(runs)
    assert [r.form for r in log.runs] == ["1.x", "1.x", "raw-1.x", "1.x", "raw-1.x", "raw-1.x"]
    for run, _out in zip(log.runs, outputs):
        assert run.avg_us and run.avg_us > 0 and run.bytes_per_s and run.bytes_per_s > 0
        assert run.tz_offset_s == 9 * 3600 and run.date_form == "ja_JP"
    rate = log.runs[1]
    printed = next(line for line in outputs[1].splitlines() if "requests completed" in line)
    assert rate.bytes_per_s is not None and rate.wall_bytes_per_s
    # ioping prints 3 significant digits ('4.64 MiB/s' on a loaded machine, '12.3 MiB/s'):
    # the rate read back, at the precision and in the unit printed, is the printed figure
    figure, unit = printed.rsplit(", ", 1)[1].removesuffix("/s").split()
    decimals = len(figure.partition(".")[2])
    scale = {"B": 1, "KiB": 1 << 10, "MiB": MIB, "GiB": 1 << 30}[unit]
    assert f"{rate.bytes_per_s / scale:.{decimals}f}" == figure, (printed, rate.bytes_per_s)
    # -B: ioping's 10 numbers, bytes per second among them
    raw = outputs[2].split()
    assert log.runs[2].bytes_per_s == float(raw[3]) and log.runs[2].requests == int(raw[0])


def test_ioping_1_3_samples():
    for name in ("default", "rate-R", "batch-B", "print-p5"):
        text = (SAMPLES / f"ioping-1.3-{name}.txt").read_text()
        log = parse_ioping_log("Sun Feb 15 08:00:01 JST 2015\n" + text)
        assert log.problems == [] and len(log.runs) == 1, (name, log.problems)
        assert (log.runs[0].bytes_per_s or 0) > 0 and (log.runs[0].avg_us or 0) > 0


def test_unreadable_lines_are_reported_and_the_rest_is_kept():
    text = "\n".join([
        "Sun Feb 15 08:00:01 UTC 2015",
        "19 850392 22343 91515442 38160 44757 75990 9672 20 973731",      # 1.x -B
        "## Sun Feb 15 09:00:01 UTC 2015",
        "--- . (ext4 /dev/sda3) ioping statistics ---",                    # 0.x human
        "ioping: something the operator's script echoed",                 # unreadable
        "10 requests completed in 9006.4 ms, 357 iops, 1.4 mb/s",
        "min/avg/max/mdev = 0.2/2.8/12.7/5.0 ms",
        "# Sun Feb 15 10:00:01 UTC 2015",
        "min/avg/max/mdev = 1 us / 2 us",                                  # truncated: unreadable
        "Sun Feb 15 10:30:01 CST 2015",                                    # ambiguous zone
        "10 9000 1111 4551111 500 900 2000 300",                           # its run: skipped
        "Sun Feb 15 11:00:01 UTC 2015",
        "10 9000 1111 4551111 500 900 2000 300",                           # 0.x -B (usec)
        "# a comment",
        "1423998001",                                                       # date +%s
        "10 1000000 10000 40960000 50000 100000 150000 10000 10 1000000",  # -p periods
        "30 9000000 3333 13653333 200000 300000 400000 50000 30 9000000",
    ])
    log = parse_ioping_log(text)
    assert [r.form for r in log.runs] == ["raw-1.x", "0.x", "raw-0.x", "raw-1.x"]
    assert [p.line for p in log.problems] == [5, 8, 9, 10]
    five, eight, nine, ten = (p.message for p in log.problems)
    assert five.startswith("unrecognised line \"ioping: something")
    assert eight == "run skipped: no ioping statistics after this date"
    assert nine == "unrecognised line 'min/avg/max/mdev = 1 us / 2 us'"
    assert ten.startswith("time zone CST is ambiguous") and ten.endswith("the run after it is skipped")
    first_avg = log.runs[0].avg_us
    assert log.runs[0].requests == 19 and first_avg is not None and abs(first_avg - 44.757) < 1e-9
    assert log.runs[1].avg_us == 2800 and log.runs[1].target == "."
    assert log.runs[2].avg_us == 900
    merged = log.runs[3]
    assert merged.requests == 40 and merged.avg_us is not None and abs(merged.avg_us - 250) < 1e-6
    assert merged.min_us == 50 and merged.max_us == 400
    assert merged.timestamp == 1423998001
    # the oldest 0.x forms: no comma before mb/s, no rates at all, no (fs device)
    old = parse_ioping_log("1423998001\n--- . ioping statistics ---\n"
                           "10 requests completed in 9006.4 ms, 357 iops 1.4 mb/s\n"
                           "min/avg/max/mdev = 0.2/2.8/12.7/5.0 ms\n1424000000\n"
                           "10 requests completed in 28.0 ms\n"
                           "min/avg/max/mdev = 0.2/2.8/12.7/5.0 ms\n")
    assert old.problems == [] and [r.iops for r in old.runs] == [357, pytest.approx(357.14, abs=0.01)]
    assert old.runs[0].bytes_per_s == 1.4 * MIB and old.runs[1].bytes_per_s is None


def test_cli_reports_line_numbers(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text(SAMPLE.read_text() + "## Mon Feb 16 08:00:01 JST 2015\nnonsense line\n"
                   "--- / (ext4 /dev/vda2) ioping statistics ---\n"
                   "671 requests completed in 3.00 s, 224 iops, 896.6 KiB/s\n"
                   "min/avg/max/mdev = 142 us / 4.46 ms / 438.2 ms / 17.9 ms\n")
    res = run_cli("history", "import-ioping", str(bad), "--db", str(tmp_path / "h.sqlite"))
    assert res.status == 0, res.err
    assert f"{bad}:10: skipped: unrecognised line 'nonsense line'" in res.err
    assert "imported 3 runs" in res.err
    res = run_cli("history", "import-ioping", str(tmp_path / "missing.log"), "--db", str(tmp_path / "h.sqlite"))
    assert res.status == 2 and "No such file" in res.err


# ------------------------------------------------------------------ property-based
@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("## 0123456789.kKMiBsumn/=-:,abcdefgioprqtvJSTU\n")),
               max_size=400))
def test_arbitrary_input_never_raises(text):
    log = parse_ioping_log(text)
    assert all(p.line >= 1 for p in log.problems)
    assert all(r.requests is None or r.requests >= 0 for r in log.runs)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(OUTPUTS), st.floats(min_value=20, max_value=50_000),
       st.sampled_from(["/", "/data", "/var/lib/mysql", "."]))
def test_any_block_reads_back(form, avg, target):
    lines = ["Sun Feb 15 08:00:01 JST 2015", *ioping_block(form, avg, target)]
    log = parse_ioping_log("\n".join(lines))
    assert log.problems == [] and len(log.runs) == 1
    run = log.runs[0]
    # printed with 1 to 3 significant digits (0.x: 0.1 ms)
    tolerance = 0.05 if not form.startswith("0.x") or form == "0.x -p" else 60 / avg + 0.01
    assert run.avg_us == pytest.approx(avg, rel=tolerance)
    mib_s = 4096 * 1e6 / avg / MIB
    assert run.bytes_per_s is not None
    assert run.bytes_per_s / MIB == pytest.approx(mib_s, rel=0.05, abs=0.06)
    if not form.endswith(("-B", "-p")) or form == "1.x -p":
        assert run.target in (target, None)
