"""What reading a malformed history database skipped or mended, counted by kind, so the
reader is told in one line (rows whose time is not a time, figures that are not numbers,
rows past a damaged page) while everything readable is still shown."""
from __future__ import annotations

import math


class Damage:
    """What reading a history found malformed, counted by kind, for one line to the reader."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, what: str, count: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + count

    def __bool__(self) -> bool:
        return bool(self.counts)

    def line(self, path: str) -> str:
        parts = [f"{n} {what}" for what, n in self.counts.items()]
        return f"{path}: damaged: " + "; ".join(parts)


# unix seconds a recorded time may take (years 1970 to 9999: what gmtime() shows, less two days
# for the UTC offset), and UTC offsets (the furthest real ones are -12 h and +14 h)
TS_RANGE = (0.0, 253_402_300_799.0 - 2 * 86400)
OFFSET_RANGE = (-86400, 86400)


def finite(value: object) -> bool:
    """A number SQLite gave back that arithmetic can use (not text, a blob, inf)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def valid_time(ts: object, tz_offset_s: object) -> bool:
    """A recorded time and UTC offset that gmtime() and the tables can show."""
    if not (isinstance(ts, (int, float)) and isinstance(tz_offset_s, (int, float))
            and finite(ts) and finite(tz_offset_s)):
        return False
    return (TS_RANGE[0] <= ts <= TS_RANGE[1] and float(tz_offset_s).is_integer()
            and OFFSET_RANGE[0] <= tz_offset_s <= OFFSET_RANGE[1])
