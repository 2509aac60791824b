"""A moment in a recording, as an operator types it: `--from`, `--to` (`top --db`), `--at`
(`tui --db`).

- `2025-03-14 03:10`, `2025-03-14T03:10:30`: on the recorded host's clock (the clock its
  times print in), whatever the zone of the machine reading the database;
- `2025-03-14T03:10+09:00`, `...Z`: that exact moment;
- `03:10`, `03:10:30`: the most recent such clock time not after now ("03:10 last night"),
  for both ends of a range alike: `--from 17:26 --to 17:28:30` at 17:29 is the last three
  minutes, whenever the last sample was taken. In a recording that ended before today (a
  copy from another host), not after the end of its last day instead;
- `2h ago` (or `--from=-2h`), `now`: relative to now; `@1741921800`: unix seconds.
"""
from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable

FORMS = "2025-03-14 03:10, 03:10, 2h ago, now, @UNIX, or ISO 8601 with Z/+HH:MM"
_RELATIVE = re.compile(r"\s*(?:-\s*(?P<a>[^\s].*?)|(?P<b>[^\s].*?)\s+ago)\s*")


class BadTime(ValueError):
    """Text that names no moment (the message lists the forms that do)."""


def parse_point(text: str, *, offset_near: Callable[[float], int], latest: float | None,
                now: float | None = None) -> float:
    """Unix seconds for `text`. `offset_near(ts)` is the recorded host's UTC offset around
    `ts`; `latest` the end of the recording (None: nothing recorded). A time of day is placed
    before now, not before `latest`: placed before the last sample, a --to after it fell on
    the day before its --from."""
    from inspector.text.durations import Duration
    now = time.time() if now is None else now
    raw = text.strip()
    if not raw:
        raise BadTime(f"an empty time (use {FORMS})")
    if raw.lower() == "now":
        return now
    if raw.startswith("@"):
        try:
            return float(raw[1:])
        except ValueError:
            raise BadTime(f"{text!r} is not @UNIX-SECONDS") from None
    m = _RELATIVE.fullmatch(raw)
    if m:
        try:
            return now - Duration(maximum=3650 * 86400)(m.group("a") or m.group("b"))
        except Exception:
            raise BadTime(f"{text!r}: not a duration back from now (-2h, 90m ago)") from None
    try:
        clock = dt.time.fromisoformat(raw)
    except ValueError:
        clock = None
    if clock is not None and clock.tzinfo is None:
        return _latest_clock_time(clock, offset_near, _clock_bound(now, latest, offset_near))
    try:
        moment = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise BadTime(f"{text!r} is not a time ({FORMS})") from None
    if moment.tzinfo is not None:
        return moment.timestamp()
    return _on_recorded_clock(moment, offset_near)


def _naive_utc(moment: dt.datetime) -> float:
    """Seconds of a naive date and time read as if it were UTC."""
    return moment.replace(tzinfo=dt.UTC).timestamp()


def _on_recorded_clock(moment: dt.datetime, offset_near: Callable[[float], int]) -> float:
    """A clock reading of the recorded host -> unix seconds, with the offset in effect then
    (asked twice: across a DST change the first guess may sit on the other side)."""
    as_utc = _naive_utc(moment)
    offset = offset_near(as_utc)
    return as_utc - offset_near(as_utc - offset)


def _clock_bound(now: float, latest: float | None, offset_near: Callable[[float], int]) -> float:
    """What a time of day may not be after: now, or the end of the recording's last day on
    its clock when that came before (a recording copied from elsewhere, days old)."""
    if latest is None:
        return now
    day = dt.datetime.fromtimestamp(latest + offset_near(latest), dt.UTC).date()
    end_of_day = _on_recorded_clock(dt.datetime.combine(day, dt.time.max), offset_near)
    return min(now, end_of_day)


def _latest_clock_time(clock: dt.time, offset_near: Callable[[float], int],
                       now: float) -> float:
    """The most recent `clock` on the recorded host's clock not after `now`."""
    offset = offset_near(now)
    day = dt.datetime.fromtimestamp(now + offset, dt.UTC).date()
    for back in range(3):        # today on that clock, else the day before
        moment = dt.datetime.combine(day - dt.timedelta(days=back), clock)
        ts = _on_recorded_clock(moment, offset_near)
        if ts <= now:
            return ts
    return ts


def describe(ts: float, offset: int) -> str:
    """`2025-03-14 03:10:00 UTC+01:00`: a moment on the recorded host's clock."""
    from inspector.text.durations import utc_offset
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts + offset)) + " " + utc_offset(offset)
