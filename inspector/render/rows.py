"""Label/value rows, the layout of most section panels: a bold label that never wraps, and its
value beside it, wrapping under itself.

Cells made from strings are plain Text, never Rich markup: host strings ("[fixed]" in ethtool
output, a device or file name with brackets) print as they read."""
from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text


def label_grid(gap: int = 2) -> Table:
    """A borderless two-column grid, `gap` spaces between the label and the value."""
    grid = Table.grid(padding=(0, gap))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    return grid


def add_row(grid: Table, label: str | Text, value: RenderableType) -> None:
    grid.add_row(plain(label), plain(value))


def plain(value: RenderableType) -> RenderableType:
    """A string as plain Text; any other renderable as it is."""
    return Text(value) if isinstance(value, str) else value
