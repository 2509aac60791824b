"""TextCanvas: a widget that shows lines painted for its exact size, one Strip per line.

The painter is a plain function (width, height) -> list[rich Text]; it runs only when the
content changed (`repaint()`) or the widget was resized, and each row is converted once, so a
live dashboard refreshed every second costs one paint and a handful of segments per row.
"""
from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget

Painter = Callable[[int, int], "list[Text]"]


class TextCanvas(Widget):
    DEFAULT_CSS = """
    TextCanvas { height: 1fr; }
    """

    def __init__(self, painter: Painter, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self.painter = painter
        self._strips: list[Strip] | None = None
        self._painted_size: tuple[int, int] | None = None
        self.painted: list[Text] = []      # the last painted lines (tests read them)

    def repaint(self) -> None:
        self._strips = None
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width, height = self.size.width, self.size.height
        if self._strips is None or self._painted_size != (width, height):
            self._painted_size = (width, height)
            self._strips = self._paint(width, height)
        return self._strips[y] if 0 <= y < len(self._strips) else Strip.blank(width)

    def _paint(self, width: int, height: int) -> list[Strip]:
        if width <= 0 or height <= 0:
            return []
        self.painted = self.painter(width, height)[:height]
        console = self.app.console
        return [Strip(list(line.render(console, end=""))).crop_extend(0, width, None)
                for line in self.painted]

    def text(self) -> str:
        """The painted lines as plain text (what a tmux capture would show)."""
        return "\n".join(line.plain for line in self.painted)
