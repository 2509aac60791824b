"""Date lines of logs (inspector.record.log_dates): what real `date` prints in glibc's locales (compiled
here with localedef) reads back to the exact instant and UTC offset, across DST changes; the
locale table equals glibc's data; zones: numeric, unambiguous, ambiguous (refused, then named
with --tz), unknown; C, -R, -Is, --rfc-3339, +%s, '#' prefixes; property-based round trips."""
from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.record.locale_dates import LOCALES
from inspector.record.log_dates import DateError, LogDate, ZoneRules, parse_date_line
from locale_data import TEST_LOCALES, date_lines, expand, lc_time

# 08:00:01 and 20:00:01 JST, a summer afternoon, and both sides of Europe's and the US's
# spring DST change (2015-03-29 01:00 UTC, 2015-03-08 07:00 UTC)
INSTANTS = [1423954801, 1423998001, 1435763461, 1427590799, 1427590801, 1425797999, 1425798001]
ZONES = ["Asia/Tokyo", "Europe/Berlin", "America/New_York", "America/Los_Angeles", "UTC",
         "Europe/Helsinki", "Asia/Seoul", "Europe/London", "Australia/Sydney"]


def expected_offset(ts: int, zone: str) -> int:
    offset = datetime.fromtimestamp(ts, ZoneInfo(zone)).utcoffset()
    assert offset is not None          # an aware datetime has one
    return int(offset.total_seconds())


def date_of(text: str, rules: ZoneRules | None = None) -> LogDate:
    got = parse_date_line(text, rules)
    assert got is not None, f"{text!r} was not read as a date line"
    return got


@pytest.mark.parametrize("locale", ["C"] + [name for name in TEST_LOCALES if name != "id_ID"])
def test_real_date_output_reads_back_exactly(glibc_locales, locale):
    for zone in ZONES:
        for ts, line in zip(INSTANTS, date_lines(locale, zone, INSTANTS, glibc_locales)):
            for text in (line, f"# {line}", f"## {line}", f"#{line}"):
                got = parse_date_line(text)
                assert got is not None, (locale, zone, text)
                assert (got.timestamp, got.tz_offset_s) == (ts, expected_offset(ts, zone)), \
                    (locale, zone, text, got)


def test_a_12_hour_clock_without_am_pm_is_refused(glibc_locales):
    # id_ID's date_fmt has %I but its am_pm is empty: 06:00:01 is 06:00 or 18:00
    line = date_lines("id_ID", "Asia/Jakarta", [1423954801], glibc_locales)[0]
    with pytest.raises(DateError, match="12-hour clock without AM/PM"):
        parse_date_line(line)


@pytest.mark.parametrize("locale", [name for name in TEST_LOCALES])
def test_the_table_is_glibcs_data(glibc_locales, locale):
    data = lc_time(locale, glibc_locales)
    entry = LOCALES[locale]
    assert entry["fmt"] == expand(data["date_fmt"], data)
    for key in ("abday", "day", "abmon", "mon", "ab_alt_mon", "alt_mon", "am_pm"):
        assert entry[key] == [v.strip() for v in data[key]], key


def test_date_options_forms():
    ts = 1423954801        # 2015-02-15 08:00:01 JST
    for text in ("2015-02-15T08:00:01+09:00", "2015-02-15 08:00:01+09:00",
                 "2015-02-14T23:00:01Z", "2015-02-15T08:00:01,123456789+09:00",
                 "Sun, 15 Feb 2015 08:00:01 +0900", "2015-02-15 08:00:01 JST",
                 "Sun Feb 15 08:00:01 JST 2015", "1423954801", "@1423954801",
                 "Sat Feb 14 23:00:01 UTC 2015", "Sun Feb 15 08:00:01 +09 2015"):
        got = parse_date_line(text)
        assert got is not None and int(got.timestamp) == ts, text
    assert date_of("2015-02-15T08:00:01+09:00").tz_offset_s == 9 * 3600
    assert date_of("1423954801").tz_offset_s == 0      # unix time: UTC hours
    assert date_of("1423954801", ZoneRules.parse(["Asia/Tokyo"])).tz_offset_s == 32400


def test_real_date_option_output(glibc_locales):
    env = {"TZ": "Asia/Tokyo", "LC_ALL": "C"}
    for args in (["-Is"], ["-Iseconds"], ["--rfc-3339=seconds"], ["-R"], ["+%s"],
                 ["+%F %T %Z"], ["-u"]):
        out = subprocess.run(["date", "-d", "@1423954801", *args], capture_output=True,
                             text=True, env=env, check=True).stdout.strip()
        got = parse_date_line(out)
        assert got is not None and got.timestamp == 1423954801, (args, out)


def test_zones():
    assert date_of("Sun Feb 15 08:00:01 KST 2015").tz_offset_s == 9 * 3600
    assert date_of("Sun Jul 05 08:00:01 CEST 2015").tz_offset_s == 2 * 3600
    assert date_of("Sun Jul 05 08:00:01 CDT 2015").tz_offset_s == -5 * 3600
    assert date_of("Sun Jul 05 08:00:01 BST 2015").tz_offset_s == 3600
    assert date_of("Sun Jul 05 08:00:01 +0530 2015").tz_offset_s == 19800
    for zone, what in (("CST", "China"), ("IST", "India"), ("AST", "Atlantic")):
        with pytest.raises(DateError, match=f"time zone {zone} is ambiguous .*{what}.*--tz {zone}="):
            parse_date_line(f"Sun Feb 15 08:00:01 {zone} 2015")
    with pytest.raises(DateError, match="unknown time zone 'XYZ': .*--tz XYZ="):
        parse_date_line("Sun Feb 15 08:00:01 XYZ 2015")
    china = ZoneRules.parse(["CST=+08:00"])
    assert date_of("Sun Feb 15 08:00:01 CST 2015", china).tz_offset_s == 8 * 3600
    # an IANA name: the offset its abbreviation has at that date (CST in winter, CDT in summer)
    chicago = ZoneRules.parse(["CST=America/Chicago", "CDT=America/Chicago"])
    assert date_of("Sun Feb 15 08:00:01 CST 2015", chicago).tz_offset_s == -6 * 3600
    assert date_of("Sun Jul 05 08:00:01 CDT 2015", chicago).tz_offset_s == -5 * 3600
    # a fall-back hour happens twice: the abbreviation says which
    dublin = ZoneRules.parse(["IST=Europe/Dublin", "GMT=Europe/Dublin"])
    a = date_of("Sun Oct 25 01:30:00 IST 2015", dublin)
    b = date_of("Sun Oct 25 01:30:00 GMT 2015", dublin)
    assert b.timestamp - a.timestamp == 3600
    # zone-less dates: UTC with a note, or the bare --tz
    got = date_of("2015-02-15 08:00:01")
    assert got.tz_offset_s == 0 and got.note is not None and "no time zone" in got.note
    got = date_of("2015-02-15 08:00:01", ZoneRules.parse(["Asia/Tokyo"]))
    assert got.timestamp == 1423954801 and got.note is None


@pytest.mark.parametrize("bad", ["CST", "CST=+25:00", "CST=Mars/Olympus", "=+08:00",
                                 "Nowhere/City", "CST=8"])
def test_tz_option_is_checked(bad):
    with pytest.raises(ValueError, match="--tz"):
        ZoneRules.parse([bad])


def test_not_dates():
    for text in ("", "#", "# ioping -R /", "--- / (ext4 /dev/vda2) ioping statistics ---",
                 "19 850392 22343 91515442 38160 44757 75990 9672 20 973731",
                 "min/avg/max/mdev = 99 us / 360 us / 143.7 ms / 3.14 ms", "12345",
                 "Sun Feb 15 JST 2015", "2015-02-30 08:00:01+09:00", "x" * 500):
        assert parse_date_line(text) is None, text


# ------------------------------------------------------------------ property-based
def render(form: str, local: datetime, zone: str) -> str:
    """What strftime prints for `local` with the form's table (the conversions date_fmts use)."""
    entry = LOCALES[form]
    fmt, out, i = entry["fmt"], [], 0
    while i < len(fmt):
        if fmt[i] != "%":
            out.append(fmt[i])
            i += 1
            continue
        j = i + 1
        pad = "0"
        if fmt[j] == "-":
            pad, j = "", j + 1
        era = fmt[j] == "E"
        if era:
            j += 1
        c = fmt[j]
        i = j + 1
        wday = (local.weekday() + 1) % 7
        if c == "a":
            out.append(entry["abday"][wday])
        elif c == "A":
            out.append(entry["day"][wday])
        elif c in "bh":
            out.append(entry["abmon"][local.month - 1])
        elif c == "B":
            out.append(entry["mon"][local.month - 1])
        elif c == "d":
            out.append(f"{local.day:02d}" if pad else str(local.day))
        elif c == "e":
            out.append(f"{local.day:2d}" if pad else str(local.day))
        elif c == "m":
            out.append(f"{local.month:02d}" if pad else str(local.month))
        elif c == "Y":
            out.append(str(local.year))
        elif c == "y":
            out.append(str(local.year + entry.get("era_offset", 0)) if era else f"{local.year % 100:02d}")
        elif c == "H":
            out.append(f"{local.hour:02d}")
        elif c == "k":
            out.append(f"{local.hour:2d}")
        elif c == "I":
            out.append(f"{(local.hour % 12) or 12:02d}")
        elif c in "pP":
            out.append(entry["am_pm"][local.hour >= 12])
        elif c == "M":
            out.append(f"{local.minute:02d}")
        elif c == "S":
            out.append(f"{local.second:02d}")
        elif c == "Z":
            out.append(zone)
        elif c == "z":
            out.append("+0000" if zone == "UTC" else "+0900")
    return "".join(out)


READABLE = [f for f, e in LOCALES.items() if "%I" not in e["fmt"] or all(e["am_pm"])]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(READABLE),
       st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2037, 12, 31)),
       st.sampled_from(["JST", "KST", "UTC", "+09"]))
def test_any_date_in_any_locale_round_trips(form, local, zone):
    local = local.replace(microsecond=0)
    text = render(form, local, zone)
    got = parse_date_line(text)
    assert got is not None, text
    assert got.tz_offset_s == (0 if zone == "UTC" else 32400)
    want = local.replace(tzinfo=timezone(timedelta(seconds=got.tz_offset_s))).timestamp()
    assert got.timestamp == want, (text, got)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_is_a_date_none_or_a_clear_error(text):
    try:
        got = parse_date_line(text)
    except DateError as exc:
        assert "--tz" in str(exc) or "12-hour" in str(exc)
        return
    assert got is None or got.timestamp == got.timestamp      # a number, not NaN
