"""Charts of a probe run: latency per interval on a log scale, and a rate per interval.

LatencyChart: the interval's p50 as a filled area, its p99 as dots and its max as marks, on a
log scale in decades chosen from p50 and p99 only, so one 500 ms outlier neither flattens the
p50 and p99 lines onto the axis (the linear chart's fault) nor decides the scale: a max above
the top decade is a `▲` on the top row. RateChart: operations per second, linear from 0.

Both keep no data of their own: the caller hands the points (`show`), so a chart always shows
the run it was given and nothing else; `shared` sets the y range two charts side by side use
(see `log_range`/`linear_range`). Intervals that reached the UI late are drawn in the late
colour (the sample stream was held up, the probe was not). Painting is a pure function
(`paint_log`, `paint_linear`) of the points and the size; the widget caches its strips until
the points or its size change.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from inspector.widgets.units import per_s

EIGHTHS = " ▁▂▃▄▅▆▇█"
AXIS_W = 6
STYLES = {"area": Style.parse("green3"), "p99": Style.parse("bold yellow"),
          "max": Style.parse("red"), "late": Style.parse("magenta"),
          "axis": Style.parse("grey62"), "rate": Style.parse("dodger_blue1")}

Cell = tuple[str, str]          # (character, style name)
Value = float | None


def format_latency(ns: float | None) -> str:
    """Axis and table units that show the figure: 850ns, 15µs, 120µs, 1.2ms, 16ms, 1.2s."""
    if ns is None:
        return "-"
    if ns < 1_000:
        return f"{ns:.0f}ns"
    if ns < 1_000_000:
        us = ns / 1e3
        return f"{us:.1f}µs" if us < 10 else f"{us:.0f}µs"
    if ns < 1_000_000_000:
        ms = ns / 1e6
        return f"{ms:.1f}ms" if ms < 10 else f"{ms:.0f}ms"
    return f"{ns / 1e9:.1f}s"


def format_rate(value: float | None) -> str:
    """0, 2.1, 950, 1.2k, 31k, 2.0M."""
    return per_s(value, decimal_below=100)


def log_range(*series: Sequence[Value]) -> tuple[int, int] | None:
    """Decades (low, high exponents of 10, high > low) that hold every positive value."""
    values = [v for s in series for v in s if v is not None and v > 0]
    if not values:
        return None
    low = math.floor(math.log10(min(values)))
    high = math.ceil(math.log10(max(values)) + 1e-9)
    return low, max(high, low + 1)


def linear_range(*series: Sequence[Value]) -> float | None:
    values = [v for s in series for v in s if v is not None]
    if not values:
        return None
    top = max(values)
    if top <= 0:
        return 1.0
    exp = math.floor(math.log10(top))
    for step in (1.0, 2.0, 5.0, 10.0):
        if top <= step * 10 ** exp * (1 + 1e-9):
            return step * 10 ** exp
    return 10.0 ** (exp + 1)


def merge_log(a: tuple[int, int] | None, b: tuple[int, int] | None) -> tuple[int, int] | None:
    if a is None or b is None:
        return a or b
    return min(a[0], b[0]), max(a[1], b[1])


def _column(value: Value, row: int, height: int, pos: Callable[[float], float]) -> str:
    """The area's character in `row` (0 = top) for a value at `pos(value)` rows from 0."""
    if value is None or value <= 0:
        return " "
    filled = pos(value)
    bottom = height - 1 - row          # rows below this one
    if filled >= bottom + 1:
        return "█"
    if filled <= bottom:
        return " "
    return EIGHTHS[max(1, min(8, int((filled - bottom) * 8)))]


def _paint(height: int, plot_w: int, area: Sequence[Value], dots: Sequence[Value],
           marks: Sequence[Value], late: Sequence[bool], pos: Callable[[float], float],
           area_style: str) -> list[list[Cell]]:
    n = min(len(area), plot_w)
    area, dots, marks = (list(s)[-n:] if n else [] for s in (area, dots, marks))
    late = list(late)[-n:] if n else []
    offset = plot_w - n                # the newest interval at the right edge
    rows: list[list[Cell]] = [[(" ", area_style)] * plot_w for _ in range(height)]

    def row_of(v: float) -> int | None:
        p = pos(v)
        if p >= height:
            return None
        return height - 1 - max(0, min(height - 1, int(p)))

    for x in range(n):
        style = "late" if late[x] else area_style
        for row in range(height):
            rows[row][offset + x] = (_column(area[x], row, height, pos), style)
        for values, glyph, mark_style in ((marks, "×", "max"), (dots, "•", "p99")):
            v = values[x] if x < len(values) else None
            if v is None or v <= 0:
                continue
            mark_row = row_of(v)
            if mark_row is None:        # above the scale: a mark on the top row
                rows[0][offset + x] = ("▲", mark_style)
                continue
            ch = rows[mark_row][offset + x][0]
            if ch == " " or ch in EIGHTHS[1:5]:
                rows[mark_row][offset + x] = (glyph, mark_style)
    return rows


def paint_log(width: int, height: int, p50: Sequence[Value], p99: Sequence[Value],
              mx: Sequence[Value], late: Sequence[bool],
              decades: tuple[int, int]) -> list[list[Cell]]:
    """Rows of (char, style) cells, axis included: `decades` (low, high) from log_range."""
    axis_w = AXIS_W if width >= 16 else 0
    plot_w = max(1, width - axis_w - (1 if axis_w else 0))
    low, high = decades
    span = high - low

    def pos(v: float) -> float:
        return (math.log10(v) - low) / span * height

    rows = _paint(height, plot_w, p50, p99, mx, late, pos, "area")
    labels: dict[int, str] = {}
    for k in range(span + 1):         # a label at each decade that has a row of its own
        row = height - 1 - min(height - 1, int(k / span * height)) if k < span else 0
        if row not in labels or k == span:
            labels[row] = format_latency(10.0 ** (low + k))
    return [_with_axis(cells, labels.get(r, ""), axis_w) for r, cells in enumerate(rows)]


def paint_linear(width: int, height: int, values: Sequence[Value], late: Sequence[bool],
                 top: float) -> list[list[Cell]]:
    axis_w = AXIS_W if width >= 16 else 0
    plot_w = max(1, width - axis_w - (1 if axis_w else 0))

    def pos(v: float) -> float:
        return v / top * height

    rows = _paint(height, plot_w, values, [], [], late, pos, "rate")
    labels = {0: format_rate(top), height - 1: "0"}
    if height >= 5:
        labels[height // 2] = format_rate(top * (height - height // 2) / height)
    return [_with_axis(cells, labels.get(r, ""), axis_w) for r, cells in enumerate(rows)]


def _with_axis(cells: list[Cell], label: str, axis_w: int) -> list[Cell]:
    if not axis_w:
        return cells
    tick = "┤" if label else "│"
    return [(f"{label[:axis_w]:>{axis_w}}{tick}", "axis"), *cells]


class RunChart(Widget):
    DEFAULT_CSS = """
    RunChart {
        height: 8;
        min-height: 3;
        border: round $primary 50%;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
    }
    """

    def __init__(self, title: str = "", *, placeholder: str = "no run selected",
                 name: str | None = None, id: str | None = None, classes: str | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self.border_title = title
        self.placeholder = placeholder
        self.late: list[bool] = []
        self._painted: list[Strip] | None = None
        self._painted_size: tuple[int, int] | None = None

    @property
    def plot_width(self) -> int:
        width = self.content_size.width or self.size.width or 80
        return max(1, width - (AXIS_W + 1 if width >= 16 else 0))

    def show_placeholder(self, text: str) -> None:
        self.placeholder = text
        self._clear()
        self._changed()

    def _clear(self) -> None:
        self.late = []

    def _changed(self) -> None:
        self._painted = None
        self.refresh()

    def _has_data(self) -> bool:
        return False

    def _rows(self, width: int, height: int) -> list[list[Cell]]:
        return []

    def render_line(self, y: int) -> Strip:
        width, height = self.size.width, self.size.height
        if self._painted is None or self._painted_size != (width, height):
            self._painted = self._build(width, height)
            self._painted_size = (width, height)
        return self._painted[y] if 0 <= y < len(self._painted) else Strip.blank(width)

    def _build(self, width: int, height: int) -> list[Strip]:
        if width <= 0 or height <= 0:
            return []
        if not self._has_data():
            lines = [Strip.blank(width) for _ in range(height)]
            wrapped = textwrap.wrap(self.placeholder, width, break_on_hyphens=False)[:height]
            top = max(0, height // 2 - len(wrapped) // 2)
            for i, text in enumerate(wrapped):
                pad = max(0, (width - len(text)) // 2)
                lines[top + i] = Strip([Segment(" " * pad + text, STYLES["axis"])]
                                       ).crop_extend(0, width, None)
            return lines
        strips = []
        for cells in self._rows(width, height):
            segments: list[Segment] = []
            run, style = "", ""
            for ch, name in cells:     # one segment per run of one style
                if name != style and run:
                    segments.append(Segment(run, STYLES[style]))
                    run = ""
                run, style = run + ch, name
            if run:
                segments.append(Segment(run, STYLES[style]))
            strips.append(Strip(segments).crop_extend(0, width, None))
        return strips


class LatencyChart(RunChart):
    """p50 (area), p99 (dots) and max (marks) per interval, log scale."""

    def __init__(self, title: str = "", **kw):
        super().__init__(title, **kw)
        self.p50: list[Value] = []
        self.p99: list[Value] = []
        self.max: list[Value] = []
        self.primary = "p50"
        self.shared: tuple[int, int] | None = None     # decades set by the caller
        self._legend()

    def _clear(self) -> None:
        super()._clear()
        self.p50, self.p99, self.max = [], [], []

    def show(self, p50: Sequence[Value], p99: Sequence[Value], mx: Sequence[Value],
             late: Sequence[bool], primary: str = "p50") -> None:
        self.p50, self.p99, self.max, self.late = list(p50), list(p99), list(mx), list(late)
        if primary != self.primary:
            self.primary = primary
        self._legend()
        self._changed()

    def show_placeholder(self, text: str) -> None:
        self.border_subtitle = ""
        super().show_placeholder(text)

    def natural_range(self) -> tuple[int, int] | None:
        n = self.plot_width
        return log_range(self.p50[-n:], self.p99[-n:])

    def set_shared(self, decades: tuple[int, int] | None) -> None:
        if decades != self.shared:
            self.shared = decades
            self._changed()

    def _legend(self) -> None:
        late = "  ▌late" if any(self.late) else ""
        self.border_subtitle = f"█ {self.primary}  • p99  × max  ▲ max above{late}"

    def _has_data(self) -> bool:
        return any(v is not None and v > 0 for v in self.p50 + self.p99)

    def _rows(self, width: int, height: int) -> list[list[Cell]]:
        decades = merge_log(self.natural_range(), self.shared) or (3, 6)
        return paint_log(width, height, self.p50, self.p99, self.max, self.late, decades)


class RateChart(RunChart):
    """One rate per interval (ops/s), linear from 0."""

    def __init__(self, title: str = "", **kw):
        super().__init__(title, **kw)
        self.values: list[Value] = []
        self.shared: float | None = None

    def _clear(self) -> None:
        super()._clear()
        self.values = []

    def show(self, values: Sequence[Value], late: Sequence[bool]) -> None:
        self.values, self.late = list(values), list(late)
        self._changed()

    def natural_range(self) -> float | None:
        return linear_range(self.values[-self.plot_width:])

    def set_shared(self, top: float | None) -> None:
        if top != self.shared:
            self.shared = top
            self._changed()

    def _has_data(self) -> bool:
        return any(v is not None for v in self.values)

    def _rows(self, width: int, height: int) -> list[list[Cell]]:
        top = max(self.natural_range() or 0.0, self.shared or 0.0) or 1.0
        return paint_linear(width, height, self.values, self.late, top)
