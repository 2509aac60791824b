"""flow_canvas.segments on lines whose spans nest (a framed panel appended with its own
style, as dashboard.hjoin and boxed build them): the same segments as rich's Text.render,
and the dashboard's own lines at every size."""
from __future__ import annotations

import random

import pytest
from rich.console import Console
from rich.style import Style
from rich.text import Text

from inspector.tui import dashboard
from inspector.tui.flow_canvas import segments
from inspector.tui.trends import Trends
from test_dashboard import busy_view

STYLES: list[str | Style] = ["", "bold", "grey50", "bold cyan", "red on black",
                             Style(color="green", dim=True), "italic grey62",
                             Style(bgcolor="blue")]


def _piece(rng: random.Random, depth: int) -> Text:
    piece = Text(style=rng.choice(STYLES))
    for _ in range(rng.randrange(0, 5)):
        if depth and rng.random() < 0.4:
            piece.append_text(_piece(rng, depth - 1))       # a styled Text inside: nesting
        else:
            piece.append("".join(rng.choice("ab ─│⣿█…") for _ in range(rng.randrange(0, 6))),
                         style=rng.choice(STYLES) or None)
    if rng.random() < 0.2 and piece.plain:
        start = rng.randrange(0, len(piece.plain))
        piece.stylize(rng.choice(STYLES[1:]), start, start + rng.randrange(0, 6))
    return piece


def _same(line: Text, console: Console) -> None:
    ours = [(s.text, s.style) for s in segments(line, console)]
    rich = [(s.text, s.style) for s in line.render(console)]
    assert ours == rich, (line.plain, line.spans, line.style)


def test_nested_spans_give_rich_segments():
    console = Console(width=80, color_system="truecolor")
    rng = random.Random(2611)
    nested = 0
    for _ in range(3000):
        line = _piece(rng, 3)
        nested += any(b.start < a.end for a, b in zip(line.spans, line.spans[1:]))
        _same(line, console)
    assert nested > 500          # the sweep was exercised, not only the one-pass path


@pytest.mark.parametrize("size", [(80, 24), (120, 30), (200, 50), (300, 80)])
def test_the_dashboard_lines_give_rich_segments(size):
    console = Console(width=size[0], color_system="truecolor")
    view = busy_view()
    trends = Trends()
    for _ in range(30):
        trends.push(view)
    lines = dashboard.paint(dashboard.Ctx(view=view, trends=trends, reason=None), *size)
    assert lines
    for line in lines:
        _same(line, console)
