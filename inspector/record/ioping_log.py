"""Parse logs of periodic ioping runs for `inspector history import-ioping`.

A log is what a cron job such as `date; ioping -R /` appends: runs, each a date line followed
by what ioping printed. The date line is read by inspector.record.log_dates: bare in the host's locale
(`Sun Feb 15 08:00:01 JST 2015`, `2015年  2月 15日 日曜日 08:00:01 JST` ...), prefixed by `#`
or `##`, `date -Is`, `date -R`, `date +%s`. ioping's output:
- ioping 1.x human statistics ("--- T (fs dev) ioping statistics ---", "N requests completed in
  T, X read, Y iops, Z/s", the "generated ..." wall-rate line of -R and newer versions,
  "min/avg/max/mdev = a / b / c / d")
- ioping 0.x human statistics ("N requests completed in 9006.4 ms, 357 iops, 1.4 mb/s",
  "min/avg/max/mdev = 0.2/2.8/12.7/5.0 ms")
- raw lines from -B or -p: 1.x has 10 integers (count sum_ns iops bps min_ns avg_ns max_ns
  mdev_ns total wall_ns); 0.x has 8 numbers with times in microseconds. Several -p lines in a
  run make one run (pooled); with the human statistics after them, those win.
Per-request lines ("4 KiB <<< ...", "4096 bytes from ...") are skipped, and so are the lines
`inspector probe io` adds to ioping's block (interval samples, the percentile line, "2 workers,
O_DIRECT", one line per worker, "note: ..."): a log of its runs imports like one of ioping's.
Other `#` lines are comments. A line that cannot be read is reported with its line number and
the rest is kept; a date whose zone cannot be told skips the run after it (said once).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from inspector.record.log_dates import DateError, LogDate, ZoneRules, parse_date_line

TIME_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "usec": 1_000, "ms": 1_000_000,
                 "msec": 1_000_000, "s": 1_000_000_000, "sec": 1_000_000_000,
                 "min": 60_000_000_000, "hour": 3_600_000_000_000}
SIZE_UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
              "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "k": 1000, "M": 1_000_000,
              "G": 1_000_000_000}
COUNT_SUFFIX = {"": 1, "k": 1_000, "M": 1_000_000, "G": 1_000_000_000}


@dataclass
class IopingRun:
    """One run of ioping: what the history stores."""
    line: int                      # line number of its date line
    timestamp: float               # unix time
    tz_offset_s: int               # the log's offset, for hour-of-day in the host's local time
    target: str | None = None
    requests: int | None = None
    duration_s: float | None = None
    iops: float | None = None       # 1 / mean latency, as ioping's "completed" line
    bytes_per_s: float | None = None
    wall_iops: float | None = None  # the "generated" line: achieved wall rate
    wall_bytes_per_s: float | None = None
    min_us: float | None = None
    avg_us: float | None = None
    max_us: float | None = None
    mdev_us: float | None = None
    form: str = ""                  # "1.x", "0.x", "raw-1.x", "raw-0.x"
    date_form: str = ""             # what read its date line: "C", "ja_JP", "iso-8601" ...


@dataclass
class ParseProblem:
    line: int
    message: str


@dataclass
class IopingLog:
    runs: list[IopingRun] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)   # lines or runs not imported
    warnings: list[ParseProblem] = field(default_factory=list)   # imported, with a caveat


class BlockError(ValueError):
    pass


_NUM = r"(\d+(?:\.\d+)?)"
_TIME_UNIT = r"(?:ns|us|µs|ms|s|min|hour)"
_STATS_HEADER = re.compile(r"^---\s+(?P<target>.*?)\s+(?:\(.*\)\s+)?ioping statistics\s+---\s*$")
_COMPLETED = re.compile(
    rf"^{_NUM}\s*(?P<rs>[kMG]?)\s*requests completed in {_NUM}\s*(?P<tu>{_TIME_UNIT})"
    rf"(?:,\s*{_NUM}\s*(?P<szu>[KMGT]?i?B)\s+(?:read|written))?"
    rf"(?:,\s*(?P<iops>\d+(?:\.\d+)?)\s*(?P<is>[kMG]?)\s*iops,?\s*(?P<bv>\d+(?:\.\d+)?)\s*"
    rf"(?P<bu>[KMGT]?i?B|[kmg]b)/s)?\s*$")
_GENERATED = re.compile(
    rf"^generated\s+{_NUM}\s*(?P<rs>[kMG]?)\s*requests in {_NUM}\s*(?P<tu>{_TIME_UNIT})"
    rf",.*?,\s*(?P<iops>\d+(?:\.\d+)?)\s*(?P<is>[kMG]?)\s*iops"
    rf"(?:,\s*(?P<bv>\d+(?:\.\d+)?)\s*(?P<bu>[KMGT]?i?B)/s)?\s*$")
_MINMAX_1X = re.compile(
    rf"^min/avg/max/mdev\s*=\s*{_NUM}\s*(ns|us|µs|ms|s)\s*/\s*{_NUM}\s*(ns|us|µs|ms|s)\s*/\s*"
    rf"{_NUM}\s*(ns|us|µs|ms|s)\s*/\s*{_NUM}\s*(ns|us|µs|ms|s)\s*$")
_MINMAX_0X = re.compile(
    rf"^min/avg/max/mdev\s*=\s*{_NUM}/{_NUM}/{_NUM}/{_NUM}\s*(ns|us|µs|ms|s)\s*$")
_RAW = re.compile(r"^\d+(?:\.\d+)?(?:\s+\d+(?:\.\d+)?){7,9}\s*$")
_PER_REQUEST = re.compile(r"(<<<|>>>|bytes (?:from|to) |request=\d+)")
# inspector probe io's own lines around ioping's block
_INSPECTOR_EXTRA = re.compile(
    r"^(?:p50/p90/p99/p99\.9\s*=|worker \d+: |note: |\S.*?:(?: jobs=\d+)? t=\d+(?:\.\d+)? s "
    r"|(?:\d+ workers, )?(?:\d+ reads, \d+ writes, )?(?:O_DIRECT|buffered)$)")


def is_ioping_line(s: str) -> bool:
    """A line of ioping's (or inspector probe io's) output."""
    return bool(_PER_REQUEST.search(s) or _INSPECTOR_EXTRA.match(s) or _STATS_HEADER.match(s)
                or _COMPLETED.match(s) or _GENERATED.match(s) or _MINMAX_1X.match(s)
                or _MINMAX_0X.match(s) or _RAW.match(s))


def _time_ns(value: str, unit: str) -> float:
    return float(value) * TIME_UNITS_NS[unit]


def _apply_raw(run: IopingRun, fields: list[float]) -> None:
    if len(fields) == 10:       # ioping 1.x: count sum_ns iops bps min avg max mdev total wall
        count, sum_ns, iops, bps, mn, avg, mx, mdev, total, wall = fields
        run.form = "raw-1.x"
        run.requests, run.duration_s = int(count), sum_ns / 1e9
        run.iops, run.bytes_per_s = iops, bps
        run.min_us, run.avg_us, run.max_us, run.mdev_us = mn / 1e3, avg / 1e3, mx / 1e3, mdev / 1e3
        if wall > 0 and total:
            run.wall_iops = total / (wall / 1e9)
            if count:
                run.wall_bytes_per_s = bps * sum_ns / count * total / wall
    elif len(fields) == 8:      # ioping 0.x: count time_us iops bps min_us avg_us max_us mdev_us
        count, sum_us, iops, bps, mn, avg, mx, mdev = fields
        run.form = "raw-0.x"
        run.requests, run.duration_s = int(count), sum_us / 1e6
        run.iops, run.bytes_per_s = iops, bps
        run.min_us, run.avg_us, run.max_us, run.mdev_us = mn, avg, mx, mdev
    else:
        raise BlockError(f"raw statistics line with {len(fields)} fields (expected 10 or 8)")


def _combine_raw(runs: list[IopingRun]) -> IopingRun:
    """Several -p period lines in one run: one run over all of them (exact count, sum,
    min, max; mdev from the pooled second moments)."""
    first = runs[0]
    total = sum(r.requests or 0 for r in runs)
    if total == 0:
        return first
    mean = sum((r.avg_us or 0) * (r.requests or 0) for r in runs) / total
    second = sum(((r.mdev_us or 0) ** 2 + (r.avg_us or 0) ** 2) * (r.requests or 0) for r in runs) / total
    out = IopingRun(line=first.line, timestamp=first.timestamp, tz_offset_s=first.tz_offset_s,
                    target=first.target, form=first.form)
    out.requests = total
    out.duration_s = sum(r.duration_s or 0 for r in runs)
    out.avg_us = mean
    out.mdev_us = math.sqrt(max(second - mean * mean, 0.0))
    out.min_us = min(r.min_us for r in runs if r.min_us is not None)
    out.max_us = max(r.max_us for r in runs if r.max_us is not None)
    out.iops = 1e6 / mean if mean > 0 else None
    # bytes per second of the pooled requests: each period's bytes over the summed time
    moved = sum((r.bytes_per_s or 0) * (r.duration_s or 0) for r in runs)
    out.bytes_per_s = moved / out.duration_s if out.duration_s else None
    return out


def _rate(value: str | None, suffix: str | None) -> float | None:
    return None if value is None else float(value) * COUNT_SUFFIX[suffix or ""]


def _finish(date: LogDate, header_line: int, lines: list[tuple[int, str]]) -> IopingRun:
    """The run whose date is on `header_line`, from its ioping lines."""
    run = IopingRun(line=header_line, timestamp=date.timestamp, tz_offset_s=date.tz_offset_s,
                    date_form=date.form)
    raw_runs: list[IopingRun] = []
    saw_completed = saw_minmax = False
    for lineno, s in lines:
        if _PER_REQUEST.search(s) or _INSPECTOR_EXTRA.match(s):
            continue
        if m := _STATS_HEADER.match(s):
            run.target = m.group("target")
        elif m := _COMPLETED.match(s):
            g = m.groups()
            run.requests = round(float(g[0]) * COUNT_SUFFIX[m.group("rs")])
            run.duration_s = _time_ns(g[2], m.group("tu")) / 1e9
            run.iops = _rate(m.group("iops"), m.group("is"))
            if m.group("bv") is not None:
                run.bytes_per_s = float(m.group("bv")) * SIZE_UNITS[m.group("bu")]
            run.form = "0.x" if m.group("bu") in ("kb", "mb", "gb", None) else "1.x"
            saw_completed = True
        elif m := _GENERATED.match(s):
            run.wall_iops = _rate(m.group("iops"), m.group("is"))
            if m.group("bv") is not None:
                run.wall_bytes_per_s = float(m.group("bv")) * SIZE_UNITS[m.group("bu")]
        elif m := _MINMAX_1X.match(s):
            v = m.groups()
            run.min_us, run.avg_us, run.max_us, run.mdev_us = (
                _time_ns(v[i], v[i + 1]) / 1e3 for i in (0, 2, 4, 6))
            saw_minmax = True
        elif m := _MINMAX_0X.match(s):
            v = m.groups()
            run.min_us, run.avg_us, run.max_us, run.mdev_us = (
                _time_ns(x, v[4]) / 1e3 for x in v[:4])
            run.form = "0.x"
            saw_minmax = True
        elif _RAW.match(s):
            raw = IopingRun(line=lineno, timestamp=run.timestamp, tz_offset_s=run.tz_offset_s,
                            target=run.target)
            _apply_raw(raw, [float(x) for x in s.split()])
            raw_runs.append(raw)
    if saw_completed or saw_minmax:
        if not (saw_completed and saw_minmax):
            missing = "min/avg/max/mdev" if saw_completed else "requests completed"
            raise BlockError(f"incomplete statistics (no {missing} line)")
        if run.iops is None and run.avg_us:
            run.iops = 1e6 / run.avg_us
        return run
    if raw_runs:
        combined = raw_runs[0] if len(raw_runs) == 1 else _combine_raw(raw_runs)
        combined.line, combined.target, combined.date_form = header_line, run.target, run.date_form
        return combined
    raise BlockError("no ioping statistics after this date")


class _Reader:
    """One pass over the log's lines: dates start runs, ioping lines fill them."""

    def __init__(self, zones: ZoneRules | None):
        self.zones = zones or ZoneRules()
        self.log = IopingLog()
        self.date: LogDate | None = None
        self.header = 0
        self.body: list[tuple[int, str]] = []
        self.undated = False            # after a date that could not be placed
        self.orphans_reported = False
        self.notes: dict[str, list[int]] = {}

    def flush(self) -> None:
        if self.date is not None:
            try:
                self.log.runs.append(_finish(self.date, self.header, self.body))
            except BlockError as exc:
                self.log.problems.append(ParseProblem(self.header, f"run skipped: {exc}"))
            except (ValueError, OverflowError, KeyError, ZeroDivisionError) as exc:
                self.log.problems.append(ParseProblem(self.header, f"run skipped: malformed "
                                                                    f"statistics: {exc}"))
        self.date, self.body = None, []

    def line(self, lineno: int, text: str) -> None:
        s = text.strip()
        if not s:
            return
        if is_ioping_line(s):
            if self.date is not None:
                self.body.append((lineno, s))
            elif not self.undated and not self.orphans_reported:
                self.log.problems.append(ParseProblem(
                    lineno, "ioping output before any date line: skipped (no time to file it at)"))
                self.orphans_reported = True
            return
        try:
            date = parse_date_line(s, self.zones)
        except DateError as exc:
            self.flush()
            self.undated = True
            self.log.problems.append(ParseProblem(lineno, f"{exc}; the run after it is skipped"))
            return
        if date is not None:
            self.flush()
            self.date, self.header, self.undated = date, lineno, False
            if date.note:
                self.notes.setdefault(date.note, []).append(lineno)
            return
        if s.startswith("#"):
            return                      # a comment
        self.log.problems.append(ParseProblem(lineno, f"unrecognised line {s[:60]!r}"))

    def finish(self) -> IopingLog:
        self.flush()
        for note, lines in self.notes.items():
            more = f" (and {len(lines) - 1} more dates)" if len(lines) > 1 else ""
            self.log.warnings.append(ParseProblem(lines[0], note + more))
        self.log.problems.sort(key=lambda p: p.line)
        return self.log


def parse_ioping_log(text: str, zones: ZoneRules | None = None) -> IopingLog:
    reader = _Reader(zones)
    for lineno, line in enumerate(text.splitlines(), start=1):
        reader.line(lineno, line)
    return reader.finish()
