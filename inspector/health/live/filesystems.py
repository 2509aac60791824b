"""Live filesystem rules: fill above thresholds, time to full at the current rate (full
within the hour is critical), inodes as well as blocks."""
from __future__ import annotations

from inspector.config import LiveThresholds
from inspector.health.live.common import bytes_s, duration
from inspector.health.live.window import Context, Window
from inspector.live.filesystems import FsUse
from inspector.model import Finding, Level

GROWTH_SPAN_S = 600.0      # growth is measured over up to this much of the past


def _growth(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope in bytes/s of (time, used) points spanning at least 2 s."""
    if len(points) < 3 or points[-1][0] - points[0][0] < 2.0:
        return None
    n = len(points)
    mt = sum(p[0] for p in points) / n
    mv = sum(p[1] for p in points) / n
    var = sum((p[0] - mt) ** 2 for p in points)
    if var <= 0:
        return None
    return sum((p[0] - mt) * (p[1] - mv) for p in points) / var


def _since_last_fall(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points since space was last freed (a deletion starts a new trend)."""
    for i in range(len(points) - 1, 0, -1):
        if points[i][1] < points[i - 1][1] * 0.99:
            return points[i:]
    return points


def rules(window: Window, t: LiveThresholds, ctx: Context) -> list[Finding]:
    last = window.last
    if not isinstance(last.filesystems, list):
        return []
    f = t.fs
    out: list[Finding] = []
    mounts = []
    for fs in last.filesystems:
        if not isinstance(fs.used_bytes, int) or not isinstance(fs.avail_bytes, int):
            continue
        mounts.append(fs.mountpoint)
        device = last.fs_devices.get(fs.mountpoint)
        series = window.series_of("fs", fs.mountpoint, GROWTH_SPAN_S)
        when = last.filesystems_wall or last.wall
        if not series.points or series.points[-1][0] != when:
            series.add(when, float(fs.used_bytes))
        out += _fill(fs, f, device)
        points = _since_last_fall(list(series.points))
        span = points[-1][0] - points[0][0] if points else 0.0
        out += _time_to_full(fs, f, _growth(points), span, device)
        out += _inodes(fs, f)
    window.forget_series("fs", mounts)
    return out


def _on(fs: FsUse, device: str | None) -> str:
    return f" ({device or fs.source}, {fs.fstype})"


def _fill(fs: FsUse, f, device: str | None) -> list[Finding]:
    pct = fs.used_pct
    if pct is None or pct < f.fill_pct or not isinstance(fs.avail_bytes, int):
        return []
    return [Finding(
        Level.CRIT if pct >= f.crit_fill_pct else Level.WARN, fs.mountpoint,
        f"{fs.mountpoint} {pct:.0f}% full, {fs.avail_bytes // (1 << 20)} MiB left"
        + _on(fs, device),
        evidence=[f"used {fs.used_bytes} B, available {fs.avail_bytes} B"],
        advice="Free space (old logs, core files, caches) or grow the filesystem before "
               "writers fail with ENOSPC.", code="live.fs.fill")]


def _time_to_full(fs: FsUse, f, growth: float | None, span: float,
                  device: str | None) -> list[Finding]:
    """A burst of writes on a big filesystem is not a trend: a warning needs growth measured
    over growth_span_s, a critical (full within the hour) over crit_growth_span_s."""
    if growth is None or growth < f.min_growth_bytes_s or not isinstance(fs.avail_bytes, int):
        return []
    left = fs.avail_bytes / growth
    if left <= f.crit_full_within_s and span >= f.crit_growth_span_s:
        level = Level.CRIT
    elif left <= f.full_within_s and span >= f.growth_span_s:
        level = Level.WARN
    else:
        return []
    return [Finding(
        level, fs.mountpoint,
        f"{fs.mountpoint} full in {duration(left)} at the current rate "
        f"({bytes_s(growth)}, {fs.avail_bytes // (1 << 20)} MiB left)" + _on(fs, device),
        evidence=[f"growing {growth:.0f} B/s over the last {span:.0f} s",
                  f"available {fs.avail_bytes} B"],
        advice="Something writes fast here: find the writer (top IO processes) and the "
               "growing files before the filesystem is full.", code="live.fs.time_to_full")]


def _inodes(fs: FsUse, f) -> list[Finding]:
    pct = fs.inodes_used_pct
    if pct is None or pct < f.inodes_pct:
        return []
    return [Finding(
        Level.CRIT if pct >= f.crit_inodes_pct else Level.WARN, fs.mountpoint,
        f"{fs.mountpoint} {pct:.0f}% of inodes used",
        evidence=[f"inodes used {pct:.1f}%"],
        advice="Many small files (a mail or session spool, a cache): creating files fails "
               "once none are left, whatever the free space.", code="live.fs.inodes")]
