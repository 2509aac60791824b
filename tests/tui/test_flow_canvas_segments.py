"""FlowCanvas turns painted lines into segments itself (flow_canvas.segments): the same
segments, text and style, as rich's Text.render, for every kind of line."""
from __future__ import annotations

import random

from rich.console import Console
from rich.style import Style
from rich.text import Text

from inspector.tui.flow_canvas import segments

STYLES: list[str | Style] = ["", "bold", "grey50", "bold cyan", "red on black", Style(color="green", dim=True),
          "italic grey62", Style(bgcolor="blue")]


def _random_line(rng: random.Random) -> Text:
    line = Text(style=rng.choice(STYLES))
    for _ in range(rng.randrange(0, 8)):
        line.append("".join(rng.choice("ab ─│⣿█…") for _ in range(rng.randrange(0, 6))),
                    style=rng.choice(STYLES) or None)
    if rng.random() < 0.3 and line.plain:       # overlapping spans, as stylize() makes
        start = rng.randrange(0, len(line.plain))
        line.stylize(rng.choice(STYLES[1:]), start, start + rng.randrange(1, 6))
    return line


def test_segments_equal_rich_render():
    console = Console(width=80, color_system="truecolor")
    rng = random.Random(26)
    for _ in range(3000):
        line = _random_line(rng)
        ours = [(s.text, s.style) for s in segments(line, console)]
        rich = [(s.text, s.style) for s in line.render(console)]
        assert ours == rich, (line.plain, line.spans, line.style)


def test_a_line_with_no_spans_is_one_segment_as_rich_makes_it():
    console = Console(width=80)
    line = Text("plain", style="bold")
    assert [(s.text, s.style) for s in segments(line, console)] == \
        [(s.text, s.style) for s in line.render(console)]
