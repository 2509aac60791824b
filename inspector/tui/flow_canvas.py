"""FlowCanvas: painted lines as tall as they need to be, inside a scrolling container.

The painter is a plain function (width, rows in view) -> list[rich Text]: it lays its content
out for the rows the operator sees and may return more lines (then the container scrolls).
It runs only when the content changed (`repaint()`) or the width or the rows in view did, and
each line becomes one Strip once.
"""
from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.geometry import Size
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

    def repaint(self) -> None:
        """The content changed: paint again, and lay out again if the height changed."""
        before = len(self.painted)
        self._strips = None
        self._painted_for = None
        width = self.size.width
        if width > 0:
            self._paint(width)
        self.refresh(layout=len(self.painted) != before)

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
            self.painted, self._strips = [], []
            return self._strips
        self.painted = self.painter(width, self.rows_in_view)
        console = self.app.console
        self._strips = [Strip(list(line.render(console, end=""))).crop_extend(0, width, None)
                        for line in self.painted]
        return self._strips

    def text(self) -> str:
        """The painted lines as plain text (what a tmux capture would show)."""
        return "\n".join(line.plain for line in self.painted)
