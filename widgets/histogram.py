"""LatencyHistogram: horizontal bars of a latency distribution in log-spaced bins.

Fed (upper bound ns, count) pairs, e.g. LatencyRecorder.buckets(); it regroups them into at most
`rows` bins of equal ratio so microseconds and seconds fit on one small panel. Updated about once
a second, so a Static with one Text is cheap enough.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static


def format_ns(ns: float | None) -> str:
    """850ns, 15µs, 1.2ms (probe_chart.format_latency: one unit style on the Probes screen)."""
    from inspector.widgets.probe_chart import format_latency
    return format_latency(ns)


def log_bins(buckets: Sequence[tuple[int, int]], rows: int) -> list[tuple[float, int]]:
    """Regroup buckets into <= rows log-spaced bins: [(upper bound ns, count)]."""
    buckets = [(u, c) for u, c in buckets if c > 0]
    if not buckets:
        return []
    lo = max(1.0, float(buckets[0][0]))
    hi = max(lo * 1.0001, float(buckets[-1][0]))
    rows = max(1, rows)
    ratio = (hi / lo) ** (1.0 / rows) if rows > 1 else hi / lo
    edges = [lo * ratio ** (i + 1) for i in range(rows)]
    edges[-1] = hi
    counts = [0] * rows
    for upper, count in buckets:
        i = 0 if upper <= lo else min(rows - 1, int(math.log(upper / lo) / math.log(ratio) - 1e-9)) \
            if ratio > 1 else rows - 1
        counts[i] += count
    return [(e, c) for e, c in zip(edges, counts)]


class LatencyHistogram(Static):
    DEFAULT_CSS = """
    LatencyHistogram { height: 8; border: round $primary 50%; }
    """

    def __init__(self, title: str = "histogram", rows: int | None = 8, **kw):
        super().__init__("no samples yet", **kw)
        # rows=None: as many bins as the widget has rows (its height comes from CSS, so a
        # small terminal gets fewer bins instead of a histogram cut off below its border)
        self.rows = rows
        if rows is not None:
            self.styles.height = rows + 2  # fixed: updates repaint without a layout pass
        self.border_title = title
        self._buckets: Sequence[tuple[int, int]] | None = None

    def on_resize(self) -> None:
        if self._buckets is not None and self.rows is None:
            self.update_buckets(self._buckets)

    def clear(self, text: str = "no samples yet") -> None:
        """Forget the buckets (a resize must not redraw another run's) and show `text`."""
        self._buckets = None
        self.update(text, layout=False)

    def update_buckets(self, buckets: Sequence[tuple[int, int]]) -> None:
        self._buckets = buckets
        rows = self.rows if self.rows is not None else max(1, self.content_size.height or 6)
        bins = log_bins(buckets, rows)
        if not bins:
            self.update("no samples yet", layout=False)
            return
        total = sum(c for _, c in bins) or 1
        peak = max(c for _, c in bins) or 1
        bar_w = max(4, (self.size.width or 40) - 22)
        text = Text(no_wrap=True, overflow="ellipsis")
        for upper, count in bins:
            n = round(count / peak * bar_w)
            text.append(f"<={format_ns(upper):>8} ", style="grey62")
            text.append("█" * n, style="cyan")
            text.append(f" {100 * count / total:5.1f}%\n", style="grey62")
        text.rstrip()
        self.update(text, layout=False)
