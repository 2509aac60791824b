"""FlowCanvas: painted lines as tall as they need to be, inside a scrolling container.

The painter is a plain function (width, rows in view) -> list[rich Text]: it lays its content
out for the rows the operator sees and may return more lines (then the container scrolls).
It runs only when the content changed (`repaint()`) or the width or the rows in view did, and
each line becomes one Strip once.
"""
from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

Painter = Callable[[int, int], "list[Text]"]


class FlowCanvas(Widget):
    DEFAULT_CSS = """
    FlowCanvas { height: auto; }
    """

    def __init__(self, painter: Painter, *, id: str | None = None):
        super().__init__(id=id)
        self.painter = painter
        self.rows_in_view = 24
        self.painted: list[Text] = []      # the last painted lines (tests read them)
        self._strips: list[Strip] | None = None
        self._painted_for: tuple[int, int] | None = None
        self._drawn: dict[tuple, Strip] = {}      # the last lines' strips, by their content
        self._drawn_width = 0

    def repaint(self) -> None:
        """The content changed: paint again; only the lines that differ are drawn again (a
        frame line, a title, a figure that stayed), and the layout only when the height
        changed."""
        before = self.painted
        self._strips = None
        self._painted_for = None
        width = self.size.width
        if width <= 0:
            self.refresh()
            return
        self._paint(width)
        if len(self.painted) != len(before):
            self.refresh(layout=True)
            return
        changed = [y for y, (old, new) in enumerate(zip(before, self.painted)) if old != new]
        for start, count in _runs(changed):
            self.refresh(Region(0, start, width, count))

    def set_rows_in_view(self, rows: int) -> None:
        rows = max(1, rows)
        if rows != self.rows_in_view:
            self.rows_in_view = rows
            self.repaint()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._paint(width))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        strips = self._paint(width)
        return strips[y] if 0 <= y < len(strips) else Strip.blank(width)

    def _paint(self, width: int) -> list[Strip]:
        key = (width, self.rows_in_view)
        if self._strips is not None and self._painted_for == key:
            return self._strips
        self._painted_for = key
        if width <= 0:
            self.painted, self._strips, self._drawn = [], [], {}
            return self._strips
        self.painted = self.painter(width, self.rows_in_view)
        console = self.app.console
        # a line painted as before keeps its strip (most frame lines and titles, every
        # second): rendering Text to segments was a third of a repaint
        drawn = self._drawn if self._drawn_width == width else {}
        strips = []
        for line in self.painted:
            key_ = (line.plain, tuple(line.spans), str(line.style))
            strip = drawn.get(key_)
            if strip is None:
                # adjacent runs of one style as one segment: fewer for Textual to style
                strip = Strip(segments(line, console)).crop_extend(0, width, None).simplify()
            strips.append(strip)
        self._drawn = {(line.plain, tuple(line.spans), str(line.style)): strip
                       for line, strip in zip(self.painted, strips)}
        self._drawn_width = width
        self._strips = strips
        return self._strips

    def text(self) -> str:
        """The painted lines as plain text (what a tmux capture would show)."""
        return "\n".join(line.plain for line in self.painted)


_NULL = Style.null()
_styles: dict[tuple, Style] = {}    # (line style, span style) -> the two combined
STYLES_KEPT = 4096                  # painters use a few dozen; a bound all the same


def segments(line: Text, console: Console) -> list[Segment]:
    """What `line.render(console)` yields, segment for segment: one pass for a line whose
    spans come one after another (a painter's lines, built by appending), a sweep over the
    span boundaries for nested ones (a framed panel appended with its own style: hjoin,
    boxed), and in both the styles combined once per session rather than once per line
    (Text.render combines styles anew for every line: a third of a repaint)."""
    text, spans = line.plain, line.spans
    if not spans:
        return [Segment(text)]     # Text.render leaves the line's own style out here too
    size = len(text)
    base_spec = line.style
    base = console.get_style(base_spec, default=_NULL)
    out: list[Segment] = []
    pos = 0
    for span in spans:
        start, end = span.start, span.end
        if start < pos:             # nested or overlapping
            return _nested_segments(line, console)
        if end > size:              # past the end: as rich does it
            return list(line.render(console))
        if start > pos:
            out.append(Segment(text[pos:start], base))
        if end > start:
            out.append(Segment(text[start:end], _combined((base_spec, span.style), console)))
        pos = max(pos, end)
    if pos < size:
        out.append(Segment(text[pos:], base))
    return out


def _combined(specs: tuple, console: Console) -> Style:
    """The styles of `specs` (the line's own first, then its spans' in their order)
    combined, as Text.render combines them, kept for the session."""
    style = _styles.get(specs)
    if style is None:
        if len(_styles) >= STYLES_KEPT:
            _styles.clear()
        style = _styles[specs] = Style.combine(
            [console.get_style(spec, default=_NULL) for spec in specs])
    return style


def _nested_segments(line: Text, console: Console) -> list[Segment]:
    """Text.render's sweep (at each boundary the spans open there, combined in their order
    after the line's own style), with the combined styles kept for the session."""
    text, spans = line.plain, line.spans
    size = len(text)
    if any(span.end > size for span in spans):
        return list(line.render(console))
    # (offset, leaving, span number): entering before leaving at one offset, as rich sorts
    marks = [(0, False, 0), (size, True, 0)]
    for index, span in enumerate(spans, 1):
        marks.append((span.start, False, index))
        marks.append((span.end, True, index))
    marks.sort(key=lambda mark: (mark[0], mark[1]))
    specs = [line.style] + [span.style for span in spans]
    open_: list[int] = []
    out: list[Segment] = []
    for (offset, leaving, index), (next_offset, _, _) in zip(marks, marks[1:]):
        if leaving:
            open_.remove(index)
        else:
            open_.append(index)
        if next_offset > offset:
            key = tuple(specs[i] for i in sorted(open_))
            out.append(Segment(text[offset:next_offset], _combined(key, console)))
    return out


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """Consecutive rows as (first, count)."""
    out: list[tuple[int, int]] = []
    for y in rows:
        if out and out[-1][0] + out[-1][1] == y:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((y, 1))
    return out
