"""Text sparklines and bars: plain strings, one glyph per sample, for one styled run per row.

Textual's Sparkline widget emits one segment per cell; these helpers return a str that the
caller styles once, so a row of a live panel stays a handful of segments however wide it is.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

BLOCKS = " ▁▂▃▄▅▆▇█"


def nice_top(value: float) -> float:
    """Smallest 1/2/5 x 10^k >= value: a scale that does not jump on every small change."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    base = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 5.0, 10.0):
        if value <= step * base * (1 + 1e-9):
            return step * base
    return 10.0 * base


def window(values: Sequence[float | None], width: int) -> list[float | None]:
    """The newest `width` values, padded on the left with None (the newest point is at the
    right edge, as in every monitor)."""
    if width <= 0:
        return []
    tail = list(values)[-width:]
    return [None] * (width - len(tail)) + tail


def scale_of(values: Sequence[float | None], top: float | None = None) -> float:
    if top is not None and top > 0:
        return top
    peak = max((v for v in values if v is not None), default=0.0)
    return nice_top(peak)


def sparkline(values: Sequence[float | None], width: int, top: float | None = None) -> str:
    """One row: a blank for no data or exactly zero, ▁ for anything above zero, █ at `top`
    (default: the window's peak rounded up to 1/2/5)."""
    cells = window(values, width)
    scale = scale_of(cells, top)
    out = []
    for v in cells:
        if v is None or v <= 0:
            out.append(" ")
        else:
            out.append(BLOCKS[max(1, min(8, math.ceil(v / scale * 8)))])
    return "".join(out)


def area(values: Sequence[float | None], width: int, height: int,
         top: float | None = None) -> list[str]:
    """`height` rows (top row first) of a filled area chart in eighth blocks."""
    cells = window(values, width)
    scale = scale_of(cells, top)
    rows = []
    for row in range(height):
        hi = scale * (height - row) / height
        lo = scale * (height - row - 1) / height
        line = []
        for v in cells:
            if v is None or v <= lo or v <= 0:
                line.append(" ")
            elif v >= hi:
                line.append("█")
            else:
                line.append(BLOCKS[max(1, min(8, math.ceil((v - lo) / (hi - lo) * 8)))])
        rows.append("".join(line))
    return rows


def bar(fraction: float | None, width: int, full: str = "█", empty: str = "░") -> tuple[str, str]:
    """(filled part, empty part) of a gauge `width` cells wide; style them apart."""
    if width <= 0:
        return "", ""
    if fraction is None:
        return "", " " * width
    n = max(0, min(width, round(fraction * width)))
    return full * n, empty * (width - n)
