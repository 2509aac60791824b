"""Parse logs of periodic ioping runs for `inspector history import-ioping`.

A log is a sequence of runs, each a `## <date>` line followed by what ioping printed:
- ioping 1.x human statistics ("--- T (fs dev) ioping statistics ---", "N requests completed in
  T, X read, Y iops, Z/s", optional "generated ..." wall-rate line, "min/avg/max/mdev = a / b / c / d")
- ioping 0.x human statistics ("N requests completed in 9006.4 ms, 357 iops, 1.4 mb/s",
  "min/avg/max/mdev = 0.2/2.8/12.7/5.0 ms")
- raw lines from -B or -p: 1.x has 10 integers (count sum_ns iops bps min_ns avg_ns max_ns mdev_ns
  total wall_ns); 0.x has 8 numbers with times in microseconds.
Per-request lines ("4 KiB <<< ...", "4096 bytes from ...") are ignored. Dates carry a time zone
(abbreviation or numeric offset); unknown abbreviations are reported and read as UTC; a bare
number is unix time (`date +%s`).
`inspector probe io` prints ioping's block plus lines of its own (interval samples, the
percentile line, "2 workers, O_DIRECT", one line per worker, "note: ..."): they are skipped, so
a log of its runs imports like one of ioping's.
A malformed block is reported with its line number and skipped; the rest is imported.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

# Abbreviations date(1) prints in the zones people run servers in. Ambiguous ones (IST, CST)
# take their most common server meaning; a numeric offset in the line always wins.
TZ_OFFSETS_H = {
    "UTC": 0, "GMT": 0, "Z": 0, "WET": 0, "WEST": 1, "BST": 1, "CET": 1, "CEST": 2, "MET": 1,
    "MEST": 2, "EET": 2, "EEST": 3, "MSK": 3, "IST": 5.5, "PKT": 5, "ICT": 7, "WIB": 7,
    "CST": -6, "CDT": -5, "EST": -5, "EDT": -4, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
    "AKST": -9, "AKDT": -8, "HST": -10, "JST": 9, "KST": 9, "HKT": 8, "SGT": 8, "AWST": 8,
    "ACST": 9.5, "ACDT": 10.5, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13, "BRT": -3,
    "ART": -3, "SAST": 2, "CAT": 2, "EAT": 3,
}

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
    line: int                      # line number of its `## date` header
    timestamp: float               # unix time
    tz_offset_s: int               # the log's offset, for hour-of-day in the host's local time
    target: str | None = None
    requests: int | None = None
    duration_s: float | None = None
    iops: float | None = None       # 1 / mean latency, as ioping's "completed" line
    bytes_per_s: float | None = None
    wall_iops: float | None = None  # the "generated" line: achieved wall rate
    min_us: float | None = None
    avg_us: float | None = None
    max_us: float | None = None
    mdev_us: float | None = None
    form: str = ""                  # "1.x", "0.x", "raw-1.x", "raw-0.x"


@dataclass
class ParseProblem:
    line: int
    message: str


@dataclass
class IopingLog:
    runs: list[IopingRun] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)   # skipped blocks
    warnings: list[ParseProblem] = field(default_factory=list)   # imported, with a caveat


class BlockError(ValueError):
    pass


_NUM = r"(\d+(?:\.\d+)?)"
_STATS_HEADER = re.compile(r"^---\s+(?P<target>.*?)\s+(?:\(.*\)\s+)?ioping statistics\s+---\s*$")
_COMPLETED_1X = re.compile(
    rf"^{_NUM}\s*(?P<rs>[kMG]?)\s*requests completed in {_NUM}\s*(?P<tu>ns|us|µs|ms|s|min|hour)"
    rf"(?:,\s*{_NUM}\s*(?P<szu>[KMGT]?i?B)\s+(?:read|written))?"
    rf",\s*{_NUM}\s*(?P<is>[kMG]?)\s*iops,\s*{_NUM}\s*(?P<bu>[KMGT]?i?B|[kmg]b)/s\s*$")
_GENERATED = re.compile(
    rf"^generated\s+{_NUM}\s*(?P<rs>[kMG]?)\s*requests in {_NUM}\s*(?P<tu>ns|us|µs|ms|s|min|hour)"
    rf",.*?,\s*{_NUM}\s*(?P<is>[kMG]?)\s*iops")
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
_EPOCH = re.compile(r"^@?(\d{9,11}(?:\.\d+)?)$")


def parse_date(text: str) -> tuple[float, int, str | None]:
    """`## ` date text -> (unix time, tz offset seconds, warning or None)."""
    text = text.strip()
    if m := _EPOCH.match(text):       # date +%s: unix time, no zone needed
        return float(m.group(1)), 0, None
    # ISO 8601 (date -Is / --rfc-3339)
    iso = text.replace(" ", "T", 1) if re.match(r"^\d{4}-\d{2}-\d{2} \d", text) else text
    try:
        dt = datetime.fromisoformat(iso.replace("Z", "+00:00"))
        if dt.tzinfo is not None:
            return dt.timestamp(), int(dt.utcoffset().total_seconds()), None
    except ValueError:
        pass
    m = re.match(r"^(?:[A-Za-z]{3},?\s+)?(?P<rest>.*)$", text)
    rest = m.group("rest") if m else text
    tokens = rest.split()
    zone_token = None
    numeric = None
    kept = []
    for tok in tokens:
        if re.fullmatch(r"[+-]\d{2}:?\d{2}", tok):
            numeric = tok
        elif re.fullmatch(r"[A-Z]{1,5}", tok) and tok not in ("AM", "PM"):
            zone_token = tok
        else:
            kept.append(tok)
    cleaned = " ".join(kept)
    dt = None
    for fmt in ("%b %d %H:%M:%S %Y", "%d %b %Y %H:%M:%S", "%Y-%m-%d %H:%M:%S", "%b %d %Y %H:%M:%S",
                "%d %b %H:%M:%S %Y", "%Y/%m/%d %H:%M:%S"):
        try:
            dt = datetime.strptime(cleaned, fmt)
            break
        except ValueError:
            continue
    if dt is None:
        raise BlockError(f"unparsable date {text!r}")
    warning = None
    if numeric is not None:
        sign = -1 if numeric[0] == "-" else 1
        digits = numeric[1:].replace(":", "")
        offset = sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    elif zone_token is not None:
        hours = TZ_OFFSETS_H.get(zone_token)
        if hours is None:
            warning = f"unknown time zone {zone_token!r}: read as UTC"
            hours = 0
        offset = int(hours * 3600)
    else:
        warning = "no time zone in date: read as UTC"
        offset = 0
    aware = dt.replace(tzinfo=timezone(timedelta(seconds=offset)))
    return aware.timestamp(), offset, warning


def _time_ns(value: str, unit: str) -> float:
    return float(value) * TIME_UNITS_NS[unit]


def _apply_raw(run: IopingRun, fields: list[float]) -> None:
    if len(fields) == 10:       # ioping 1.x: count sum_ns iops bps min avg max mdev total wall
        count, sum_ns, iops, bps, mn, avg, mx, mdev, _total, wall = fields
        run.form = "raw-1.x"
        run.requests, run.duration_s = int(count), sum_ns / 1e9
        run.iops, run.bytes_per_s = iops, bps
        run.min_us, run.avg_us, run.max_us, run.mdev_us = mn / 1e3, avg / 1e3, mx / 1e3, mdev / 1e3
        if wall > 0:
            run.wall_iops = _total / (wall / 1e9) if _total else None
    elif len(fields) == 8:      # ioping 0.x: count time_us iops bps min_us avg_us max_us mdev_us
        count, sum_us, iops, bps, mn, avg, mx, mdev = fields
        run.form = "raw-0.x"
        run.requests, run.duration_s = int(count), sum_us / 1e6
        run.iops, run.bytes_per_s = iops, bps
        run.min_us, run.avg_us, run.max_us, run.mdev_us = mn, avg, mx, mdev
    else:
        raise BlockError(f"raw statistics line with {len(fields)} fields (expected 10 or 8)")


def _combine_raw(runs: list[IopingRun]) -> IopingRun:
    """Several -p period lines in one block: one run over all of them (exact count, sum,
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
    bps = [r.bytes_per_s for r in runs if r.bytes_per_s]
    out.bytes_per_s = sum(b * (r.requests or 0) for b, r in zip(bps, runs)) / total if bps else None
    return out


def _parse_block(header_line: int, date_text: str, lines: list[tuple[int, str]],
                 log: IopingLog) -> IopingRun:
    ts, offset, warning = parse_date(date_text)
    if warning:
        log.warnings.append(ParseProblem(header_line, warning))
    run = IopingRun(line=header_line, timestamp=ts, tz_offset_s=offset)
    raw_runs: list[IopingRun] = []
    saw_completed = saw_minmax = False
    for lineno, text in lines:
        s = text.strip()
        if not s or _PER_REQUEST.search(s) or _INSPECTOR_EXTRA.match(s):
            continue
        if m := _STATS_HEADER.match(s):
            run.target = m.group("target")
            continue
        if m := _COMPLETED_1X.match(s):
            g = m.groups()
            run.requests = round(float(g[0]) * COUNT_SUFFIX[m.group("rs")])
            run.duration_s = _time_ns(g[2], m.group("tu")) / 1e9
            run.iops = float(m.group(m.re.groupindex["is"] - 1)) * COUNT_SUFFIX[m.group("is")]
            run.bytes_per_s = float(m.group(m.re.groupindex["bu"] - 1)) * SIZE_UNITS[m.group("bu")]
            run.form = "0.x" if m.group("bu") in ("kb", "mb", "gb") else "1.x"
            saw_completed = True
            continue
        if m := _GENERATED.match(s):
            run.wall_iops = float(m.group(m.re.groupindex["is"] - 1)) * COUNT_SUFFIX[m.group("is")]
            continue
        if m := _MINMAX_1X.match(s):
            v = m.groups()
            run.min_us, run.avg_us, run.max_us, run.mdev_us = (
                _time_ns(v[i], v[i + 1]) / 1e3 for i in (0, 2, 4, 6))
            saw_minmax = True
            continue
        if m := _MINMAX_0X.match(s):
            v = m.groups()
            run.min_us, run.avg_us, run.max_us, run.mdev_us = (
                _time_ns(x, v[4]) / 1e3 for x in v[:4])
            run.form = "0.x"
            saw_minmax = True
            continue
        if _RAW.match(s):
            raw = IopingRun(line=lineno, timestamp=ts, tz_offset_s=offset, target=run.target)
            _apply_raw(raw, [float(x) for x in s.split()])
            raw_runs.append(raw)
            continue
        raise BlockError(f"line {lineno}: unrecognised ioping output {s[:60]!r}")
    if saw_completed or saw_minmax:
        if not (saw_completed and saw_minmax):
            missing = "min/avg/max/mdev" if saw_completed else "requests completed"
            raise BlockError(f"incomplete statistics (no {missing} line)")
        return run
    if raw_runs:
        combined = raw_runs[0] if len(raw_runs) == 1 else _combine_raw(raw_runs)
        combined.line, combined.target = header_line, run.target
        return combined
    raise BlockError("no ioping statistics in this block")


def parse_ioping_log(text: str) -> IopingLog:
    log = IopingLog()
    header: tuple[int, str] | None = None
    body: list[tuple[int, str]] = []
    preamble_reported = False

    def flush() -> None:
        if header is None:
            return
        try:
            log.runs.append(_parse_block(header[0], header[1], body, log))
        except BlockError as exc:
            log.problems.append(ParseProblem(header[0], str(exc)))
        except (ValueError, OverflowError, KeyError, ZeroDivisionError) as exc:
            log.problems.append(ParseProblem(header[0], f"malformed block: {exc}"))

    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.startswith("## "):
            flush()
            header, body = (lineno, line[3:]), []
        elif header is None:
            if line.strip() and not preamble_reported:
                log.problems.append(ParseProblem(lineno, "text before the first '## <date>' line ignored"))
                preamble_reported = True
        else:
            body.append((lineno, line))
    flush()
    return log
