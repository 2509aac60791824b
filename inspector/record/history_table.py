"""The hour-of-day / per-day table of recorded probe runs, as `inspector history` prints it and
the TUI's history view shows it: runs, ops/s, throughput (MiB/s, when runs carry it) and mean
latency, each as mean and standard deviation across the runs of the bucket, the mean p99,
failed runs, and a bar of the mean latency."""
from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.text.durations import utc_offset

if TYPE_CHECKING:
    from rich.console import Group

    from inspector.record.history import Bucket


def render_buckets(name: str, buckets: list[Bucket], by: str,
                   offsets: list[int] | None = None) -> Group:
    """Each figure is "mean ±sd" across the runs that fall in the bucket (the sample standard
    deviation); MiB/s only when some run carries a throughput."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text
    what = "hour of day, local time of each run" if by == "hour" else "day, local date of each run"
    if offsets:
        what += f"; runs logged at {', '.join(utc_offset(o) for o in offsets)}"
    throughput = any(b.mib_s_mean is not None for b in buckets)
    table = Table(show_edge=False, pad_edge=False, padding=(0, 1))
    columns = [by, "runs", "ops/s"] + (["MiB/s"] if throughput else []) + \
        ["latency", "p99", "err"]
    for col in columns:
        table.add_column(col, justify="left" if col == by else "right", no_wrap=True)
    table.add_column("", no_wrap=True)
    worst = max((b.lat_mean_us or 0 for b in buckets), default=0) or 1
    width = 8 if by == "hour" else 3         # what 80 columns leave beside a date
    for b in buckets:
        bar = bar_text((b.lat_mean_us or 0) / worst, width)
        cells = [b.key, str(b.runs), spread(b.ops_mean, b.ops_stdev, number)]
        if throughput:
            cells.append(spread(b.mib_s_mean, b.mib_s_stdev, mib))
        cells += [latency(b.lat_mean_us, b.lat_stdev_us), us(b.lat_p99_mean_us), str(b.errors)]
        table.add_row(*cells, Text(bar, style="red" if (b.lat_mean_us or 0) > worst / 2
                                   else "green"))
    return Group(Text(f"{name}: by {what} (mean ±sd across its runs)", style="bold"), table)


def bar_text(fraction: float, width: int) -> str:
    """A bar `fraction` of `width` cells long, in eighths of a cell."""
    eighths = round(max(0.0, min(fraction, 1.0)) * width * 8)
    return "█" * (eighths // 8) + ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")[eighths % 8]


def spread(mean: float | None, sd: float | None, fmt) -> str:
    if mean is None:
        return "-"
    return fmt(mean) + ("" if sd is None else f" ±{fmt(sd)}")


def latency(mean_us: float | None, sd_us: float | None) -> str:
    """Mean and spread in the mean's unit: "2.41 ±2.90 ms", "360 ±31 us"."""
    if mean_us is None:
        return "-"
    if mean_us >= 1000:
        text = f"{mean_us / 1000:.2f}" + ("" if sd_us is None else f" ±{sd_us / 1000:.2f}")
        return text + " ms"
    return f"{mean_us:.0f}" + ("" if sd_us is None else f" ±{sd_us:.0f}") + " us"


def number(v: float | None) -> str:
    return "-" if v is None else (f"{v / 1000:.1f}k" if v >= 10000 else f"{v:.0f}")


def mib(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} us"


# ------------------------------------------------------------------ recorded samples
def _what(by: str, offsets: list[int] | None) -> str:
    what = ("hour of day, local time of each interval" if by == "hour"
            else "day, local date of each interval")
    if offsets:
        what += f"; recorded at {', '.join(utc_offset(o) for o in offsets)}"
    return what


def percent(figure) -> str:
    """"12.3 ±4.5" of a Figure (inspector.record.sample_history), "-" when nothing was counted."""
    if figure.mean is None:
        return "-"
    return f"{figure.mean:.1f}" + ("" if figure.stdev is None else f" ±{figure.stdev:.1f}")


def top(figure, fmt=lambda v: f"{v:.1f}") -> str:
    return "-" if figure.max is None else fmt(figure.max)


def render_cpu_buckets(buckets: list, by: str, offsets: list[int] | None = None) -> Group:
    """CPU by hour or day: %iowait, %steal and %busy, mean ±sd across the intervals, and the
    largest steal (a noisy neighbour shows in steal first)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text
    table = Table(show_edge=False, pad_edge=False, padding=(0, 1))
    for col in (by, "intervals", "%iowait", "%steal", "max %steal", "%busy"):
        table.add_column(col, justify="left" if col == by else "right", no_wrap=True)
    table.add_column("", no_wrap=True)
    worst = max((b.steal.mean or 0) + (b.iowait.mean or 0) for b in buckets) if buckets else 0
    width = 8 if by == "hour" else 3
    for b in buckets:
        level = (b.steal.mean or 0) + (b.iowait.mean or 0)
        table.add_row(b.key, str(b.intervals), percent(b.iowait), percent(b.steal),
                      top(b.steal), percent(b.busy),
                      Text(bar_text(level / worst if worst else 0, width),
                           style="red" if worst and level > worst / 2 else "green"))
    return Group(Text(f"CPU: by {_what(by, offsets)} (mean ±sd across its intervals; bar: "
                      "iowait + steal)", style="bold"), table)


def render_disk_buckets(name: str, buckets: list, by: str,
                        offsets: list[int] | None = None) -> Group:
    """One disk by hour or day: IOPS and %util (mean ±sd across the intervals it was there,
    idle ones as 0), await (across the intervals with IO) and the largest %util."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text
    table = Table(show_edge=False, pad_edge=False, padding=(0, 1))
    for col in (by, "intervals", "IOPS", "await", "%util", "max %util"):
        table.add_column(col, justify="left" if col == by else "right", no_wrap=True)
    table.add_column("", no_wrap=True)
    width = 8 if by == "hour" else 3
    for b in buckets:
        util = b.util.mean or 0.0
        wait = ("-" if b.await_ms.mean is None else
                latency(b.await_ms.mean * 1000, (b.await_ms.stdev or 0.0) * 1000))
        table.add_row(b.key, str(b.intervals), spread(b.iops.mean, b.iops.stdev, number),
                      wait, percent(b.util), top(b.util),
                      Text(bar_text(util / 100.0, width), style="red" if util >= 50 else "green"))
    return Group(Text(f"{name}: by {_what(by, offsets)} (mean ±sd; await across the "
                      "intervals with IO; bar: %util)", style="bold"), table)


# what the hour and day of a bucket mean, said in every --json table
TIME_BASIS = "local time of each run (its timestamp plus its recorded UTC offset)"
