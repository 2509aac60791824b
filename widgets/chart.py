"""LiveChart: a cheap big live chart for Textual.

Why not the built-in Sparkline: at full width and 16 rows it emits one styled segment per cell,
and at 4 Hz that alone cost about three times the Probes screen's CPU goal (tests/bench/
bench_tui.py measures the screen against it). Here every plot row is ONE styled run (one Segment),
plus one dim segment for the axis label, so a refresh writes little and renders fast.

Several series share a chart: the first is drawn as a filled area with eighth blocks, the others
as marker glyphs above it (so a row never needs a second style). The y-scale is sticky: it grows
at once to a "nice" bound (1-2-5 steps) when a value exceeds it and shrinks only when everything
visible has stayed below 40% of it, so the picture does not jump on every tick.
"""
from __future__ import annotations

import math
import textwrap
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

EIGHTHS = " ▁▂▃▄▅▆▇█"
MARKERS = "•×+o"
SHRINK_BELOW = 0.4
# Bottom to top; 256-colour-safe names so TEXTUAL_COLOR_SYSTEM=256 stays readable.
DEFAULT_GRADIENT = ("green", "green", "chartreuse3", "yellow3", "dark_orange", "red3")


def nice_ceil(value: float) -> float:
    """Smallest 1/2/5 x 10^k that is >= value (value > 0)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = math.floor(math.log10(value))
    base = 10.0 ** exp
    for step in (1.0, 2.0, 5.0, 10.0):
        if value <= step * base * (1 + 1e-9):
            return step * base
    return 10.0 * base


def sticky_scale(current: float | None, visible_max: float) -> float:
    """Next y-scale bound given the current one and the largest visible value."""
    target = nice_ceil(visible_max) if visible_max > 0 else 1.0
    if current is None or visible_max > current:
        return target
    if visible_max < current * SHRINK_BELOW:
        return target
    return current


def compact_number(value: float) -> str:
    """4-5 character axis labels: 950, 1.2k, 35k, 2.0M."""
    if value == 0:
        return "0"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= div:
            v = value / div
            return f"{v:.1f}{suffix}" if v < 10 else f"{v:.0f}{suffix}"
    if abs(value) >= 10 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.2g}"


class LiveChart(Widget):
    """Scrolling multi-series chart. `push(v0, v1, ...)` appends one point per series."""

    DEFAULT_CSS = """
    LiveChart {
        height: 10;
        min-height: 4;
        border: round $primary 50%;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
    }
    """

    def __init__(self, title: str = "", *, series: Sequence[str] = ("value",), unit: str = "",
                 capacity: int = 512, formatter: Callable[[float], str] = compact_number,
                 gradient: Sequence[str] = DEFAULT_GRADIENT, placeholder: str = "no data yet",
                 name: str | None = None, id: str | None = None, classes: str | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self.series = tuple(series)
        self.unit = unit
        self.formatter = formatter
        self.placeholder = placeholder
        self._data: list[deque] = [deque(maxlen=capacity) for _ in self.series]
        self._styles = [Style.parse(c) for c in gradient]
        self._axis_style = Style.parse("grey62")
        self._scale: float | None = None
        self._strips: list[Strip] | None = None
        self._strips_size: tuple[int, int] | None = None
        self.border_title = title
        self._update_subtitle()

    # ---------------------------------------------------------------- data
    def push(self, *values: float | None) -> None:
        for i, dq in enumerate(self._data):
            dq.append(values[i] if i < len(values) else None)
        self._strips = None
        self.refresh()

    def extend(self, rows: Iterable[Sequence[float | None]]) -> None:
        for row in rows:
            for i, dq in enumerate(self._data):
                dq.append(row[i] if i < len(row) else None)
        self._strips = None
        self.refresh()

    def clear(self, placeholder: str | None = None) -> None:
        for dq in self._data:
            dq.clear()
        if placeholder is not None:
            self.placeholder = placeholder
        self._scale = None
        self._strips = None
        self.refresh()

    def set_placeholder(self, text: str) -> None:
        if text != self.placeholder:
            self.placeholder = text
            self._strips = None
            self.refresh()

    @property
    def points(self) -> int:
        return len(self._data[0]) if self._data else 0

    @property
    def scale(self) -> float | None:
        return self._scale

    def latest(self) -> tuple[float | None, ...]:
        return tuple(dq[-1] if dq else None for dq in self._data)

    def rename_series(self, names: Sequence[str]) -> None:
        """New legend names (same number of series), e.g. when a probe reports a mean, not p50."""
        if tuple(names) != self.series and len(names) == len(self.series):
            self.series = tuple(names)
            self._update_subtitle()

    def set_series(self, names: Sequence[str]) -> None:
        """Replace the series (any number; e.g. one per nameserver): the data starts over."""
        names = tuple(names) or ("value",)
        if names == self.series:
            return
        capacity = self._data[0].maxlen if self._data else 512
        self.series = names
        self._data = [deque(maxlen=capacity) for _ in names]
        self._scale = None
        self._strips = None
        self._update_subtitle()
        self.refresh()

    def _update_subtitle(self) -> None:
        if len(self.series) > 1:
            names = [f"█ {self.series[0]}"] + [f"{MARKERS[(i - 1) % len(MARKERS)]} {s}"
                                                for i, s in enumerate(self.series[1:], 1)]
            self.border_subtitle = "  ".join(names)

    # ---------------------------------------------------------------- render
    def render_line(self, y: int) -> Strip:
        width, height = self.size.width, self.size.height
        if self._strips is None or self._strips_size != (width, height):
            self._strips = self._build(width, height)
            self._strips_size = (width, height)
        return self._strips[y] if 0 <= y < len(self._strips) else Strip.blank(width)

    def _build(self, width: int, height: int) -> list[Strip]:
        if width <= 0 or height <= 0:
            return []
        # the axis needs 7 cells; a chart narrower than 16 cells drops it rather than spill
        label_w = 6 if width >= 16 else 0
        plot_w = max(1, width - label_w - (1 if label_w else 0))
        window = [list(dq)[-plot_w:] for dq in self._data]
        visible = [v for col in window for v in col if v is not None]
        if not visible:
            lines = [Strip.blank(width) for _ in range(height)]
            # a long placeholder (a failed run's reason) wraps rather than being cut
            wrapped = textwrap.wrap(self.placeholder, width, break_on_hyphens=False) or [""]
            wrapped = wrapped[:height]
            top = max(0, height // 2 - len(wrapped) // 2)
            for i, text in enumerate(wrapped):
                pad = max(0, (width - len(text)) // 2)
                lines[top + i] = Strip([Segment(" " * pad + text, self._axis_style)]
                                       ).crop_extend(0, width, None)
            return lines
        self._scale = sticky_scale(self._scale, max(visible))
        scale = self._scale
        n = len(window[0])
        offset = plot_w - n  # newest point at the right edge
        primary = window[0]
        others = window[1:]
        strips: list[Strip] = []
        label_rows = {0: scale, height // 2: scale * (height - height // 2) / height}
        for row in range(height):
            hi = scale * (height - row) / height
            lo = scale * (height - row - 1) / height
            cells = [" "] * plot_w
            for x in range(n):
                v = primary[x]
                ch = " "
                if v is not None:
                    if v >= hi:
                        ch = "█"
                    elif v > lo:
                        ch = EIGHTHS[max(1, min(8, int((v - lo) / (hi - lo) * 8)))]
                if ch == " " or ch in EIGHTHS[1:4]:
                    for k, series in enumerate(others):
                        w = series[x]
                        if w is None or w <= 0:
                            continue  # nothing to mark at zero: keeps idle charts clean
                        if lo <= w < hi or (row == 0 and w >= hi):
                            ch = MARKERS[k % len(MARKERS)]
                            break
                cells[offset + x] = ch
            if row in label_rows:
                label = self.formatter(label_rows[row])
            elif row == height - 1:
                label = "0"
            else:
                label = ""
            if row == height - 1 and self.unit:
                label = f"{label} {self.unit}" if len(label) + len(self.unit) < label_w else label
            if not label_w:
                axis = ""
            else:
                axis = f"{label[:label_w]:>{label_w}}┤" if label else " " * label_w + "│"
            style = self._styles[min(len(self._styles) - 1, (height - 1 - row) * len(self._styles) // height)]
            segments = [Segment(axis, self._axis_style)] if axis else []
            segments.append(Segment("".join(cells), style))
            # never wider than the content box: nothing may draw over the border
            strips.append(Strip(segments).crop_extend(0, width, None))
        return strips
