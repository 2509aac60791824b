"""A recorded timeline for the TUI (`inspector tui --db FILE --at TIME`): the intervals
`record --samples` stored, a cursor that moves through them, and the moments where recorded
findings (checks that were not OK) and probe runs happened.

No Textual here: `view()` is the LiveView the live panels show (inspector.tui.live.normalise of
the recorded Rates), `trends()` the Trends of the intervals up to the cursor (the panels'
sparklines), `strip(width)` the one-line map of the recording with its markers. Opening reads
the list of intervals (id and time: a week at 10 s is 60,480 pairs) and the markers, and
decodes only what the cursor shows; decoded intervals are kept in a small cache.
"""
from __future__ import annotations

import bisect
import time
from collections import OrderedDict
from dataclasses import dataclass

from inspector.model import Finding, Level, Unknown, finding_from_json
from inspector.record.history import HistoryDB, HistoryError
from inspector.record.store import SampleReader
from inspector.record.time_points import describe, parse_point
from inspector.tui.live import LiveView, normalise
from inspector.tui.trends import CAPACITY, Trends

CACHE = 2 * CAPACITY       # decoded intervals kept: stepping back and forth decodes nothing
NOT_RECORDED = Unknown("not recorded (record --samples keeps CPU, disks, NICs and processes)")


class TimelineError(Exception):
    """A database that cannot be opened, or holds no samples (one line for the user)."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


@dataclass
class Marker:
    ts: float
    kind: str          # "finding" (a check whose worst level was not ok) or "probe"
    label: str         # "warn md.degraded", "io:/var/lib/mysql 1203 ops/s"


class RecordedTimeline:
    def __init__(self, db: HistoryDB, reader: SampleReader, at: float | None):
        self.db, self.reader = db, reader
        timeline = reader.timeline()
        self.ids = [i for i, _ in timeline]
        self.times = [ts for _, ts in timeline]
        self.position = len(self.ids) - 1 if at is None else self.index_at(at)
        self.checks = db.checks()
        self.check_times = [c["ts"] for c in self.checks]
        self.markers = sorted(self._markers(), key=lambda m: m.ts)
        self.marker_times = [m.ts for m in self.markers]
        self._cache: OrderedDict[int, object] = OrderedDict()
        self._trends: Trends | None = None
        self._trends_at: int | None = None

    @classmethod
    def open(cls, path: str, at: float | str | None = None) -> RecordedTimeline:
        """Open read-only; `at` as unix seconds, or text (time_points forms), or None (the
        end of the recording). TimelineError when there is nothing to show."""
        try:
            db = HistoryDB.recording(path)
        except HistoryError as exc:
            raise TimelineError(str(exc)) from None
        reader = SampleReader(db.conn)
        span = reader.span()
        if not span.intervals:
            db.close()
            raise TimelineError(f"{path}: no recorded samples (`inspector record --samples` "
                                "records them)", status=1)
        if isinstance(at, str):
            try:
                at = parse_point(at, offset_near=reader.offset_near, latest=span.last_ts)
            except ValueError as exc:
                db.close()
                raise TimelineError(str(exc)) from None
        return cls(db, reader, at)

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ where
    def index_at(self, ts: float) -> int:
        """The interval that holds `ts`: the first one ending at or after it (the last one
        for a time after the recording)."""
        return min(bisect.bisect_left(self.times, ts), len(self.times) - 1)

    @property
    def ts(self) -> float:
        return self.times[self.position]

    @property
    def offset(self) -> int:
        return self.reader.offset_near(self.ts)

    def when(self) -> str:
        return describe(self.ts, self.offset)

    def clock(self, ts: float) -> str:
        """HH:MM:SS of `ts` on the recorded host's clock."""
        return time.strftime("%H:%M:%S", time.gmtime(ts + self.reader.offset_near(ts)))

    def move(self, steps: int) -> bool:
        """Move by whole intervals; False when already at that end."""
        new = max(0, min(len(self.ids) - 1, self.position + steps))
        moved, self.position = new != self.position, new
        return moved

    def move_by(self, seconds: float) -> bool:
        target = self.ts + seconds
        new = (bisect.bisect_left(self.times, target) if seconds > 0
               else bisect.bisect_right(self.times, target) - 1)
        new = max(0, min(len(self.ids) - 1, new))
        moved, self.position = new != self.position, new
        return moved

    def to_marker(self, direction: int) -> Marker | None:
        """Jump to the next (1) or previous (-1) marker; None when there is none that way."""
        if direction > 0:
            i = bisect.bisect_right(self.marker_times, self.ts)
            # a marker inside the current interval counts as here, not next
            while i < len(self.markers) and self.index_at(self.markers[i].ts) <= self.position:
                i += 1
            if i >= len(self.markers):
                return None
        else:
            start = self.times[self.position - 1] if self.position else float("-inf")
            i = bisect.bisect_right(self.marker_times, start) - 1
            if i < 0:
                return None
        marker = self.markers[i]
        self.position = self.index_at(marker.ts)
        return marker

    # ------------------------------------------------------------------ what
    def rates(self, index: int | None = None):
        index = self.position if index is None else index
        interval_id = self.ids[index]
        got = self._cache.get(interval_id)
        if got is None:
            got = self.reader.by_ids([interval_id])[0]
            self._remember(interval_id, got)
        else:
            self._cache.move_to_end(interval_id)
        return got

    def _remember(self, interval_id: int, rates) -> None:
        self._cache[interval_id] = rates
        while len(self._cache) > CACHE:
            self._cache.popitem(last=False)

    def view(self, index: int | None = None) -> LiveView:
        view = normalise(self.rates(index)) or LiveView(interval=0.0)   # (never None here)
        view.memory = view.pressure = view.filesystems = NOT_RECORDED
        return view

    def trends(self) -> Trends:
        """The figures of the intervals up to the cursor (at most the live panels' span):
        one more pushed when the cursor moved one forward, rebuilt otherwise."""
        if self._trends is not None and self._trends_at == self.position:
            return self._trends
        if self._trends is not None and self._trends_at == self.position - 1:
            self._trends.push(self.view())
        else:
            first = max(0, self.position - CAPACITY + 1)
            wanted = [i for i in range(first, self.position + 1) if self.ids[i] not in self._cache]
            for rates in self.reader.by_ids([self.ids[i] for i in wanted]):
                self._remember(rates.interval_id, rates)
            self._trends = Trends()
            for i in range(first, self.position + 1):
                self._trends.push(self.view(i))
        self._trends_at = self.position
        return self._trends

    def check_at(self) -> dict | None:
        """The recorder's last check at or before the end of the cursor's interval."""
        i = bisect.bisect_right(self.check_times, self.ts) - 1
        return self.checks[i] if i >= 0 else None

    def findings_at(self) -> list[Finding]:
        check = self.check_at()
        if check is None:      # not "no findings": nothing was checked
            return [Finding(level=Level.UNKNOWN, subject="record", code="record.no_check",
                            message="no check recorded at or before this moment (the "
                                    "recorder checks every --every)")]
        out = []
        for f in check["findings"]:
            if isinstance(f, dict):
                try:
                    out.append(finding_from_json(f))
                except (KeyError, TypeError):
                    continue
        return out

    def _markers(self) -> list[Marker]:
        out = []
        for c in self.checks:
            if c["worst"] != "ok":
                codes = sorted({f.get("code") or "?" for f in c["findings"]
                                if isinstance(f, dict) and f.get("level") not in ("ok", None)})
                out.append(Marker(c["ts"], "finding", f"{c['worst']} {', '.join(codes[:3])}"))
        for run in self.db.runs():
            what = f"{run['probe']}:{run['target']}"
            if run["error"]:
                what += " failed"
            elif run["ops_per_s"] is not None:
                what += f" {run['ops_per_s']:.0f} ops/s"
            out.append(Marker(run["ts"], "probe", what))
        return out

    def markers_here(self) -> list[Marker]:
        """The markers inside the cursor's interval."""
        start = self.times[self.position - 1] if self.position else float("-inf")
        lo = bisect.bisect_right(self.marker_times, start)
        hi = bisect.bisect_right(self.marker_times, self.ts)
        return self.markers[lo:hi]

    def strip(self, width: int) -> str:
        """The whole recording in `width` cells: ▲ a recorded finding, ◆ a probe run (▲ wins),
        · nothing, ┃ the cursor."""
        if width <= 0:
            return ""
        first, last = self.times[0], self.times[-1]
        span = max(last - first, 1e-9)

        def cell(ts: float) -> int:
            return max(0, min(width - 1, int((ts - first) / span * width)))
        cells = ["·"] * width
        for m in self.markers:
            if first - span / width <= m.ts <= last:
                c = cell(m.ts)
                if m.kind == "finding" or cells[c] == "·":
                    cells[c] = "▲" if m.kind == "finding" else "◆"
        cells[cell(self.ts)] = "┃"
        return "".join(cells)
