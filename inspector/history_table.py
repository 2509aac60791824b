"""The hour-of-day / per-day table of recorded probe runs, as `inspector history` prints it and
the TUI's history view shows it: runs, ops/s, throughput (MiB/s, when runs carry it) and mean
latency, each as mean and standard deviation across the runs of the bucket, the mean p99,
failed runs, and a bar of the mean latency."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Group

    from inspector.history import Bucket


def utc_offset(seconds: int) -> str:
    sign = "-" if seconds < 0 else "+"
    h, m = divmod(abs(seconds) // 60, 60)
    return f"UTC{sign}{h:02d}:{m:02d}"


def render_buckets(name: str, buckets: list["Bucket"], by: str,
                   offsets: list[int] | None = None) -> "Group":
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
