"""panels.fitted measures lines of one-cell characters by their length: the same lines, cut
or padded, as Text.truncate makes them."""
from __future__ import annotations

import random

from rich.cells import cell_len
from rich.text import Text

from inspector.tui import panels

DRAWN = "ab Z~09 ─│╭╮╰╯█▇▁⣿⠁⡀…·°µ↑↓•é\u00a0"
WIDE = "日本\u00ad\u0301\u200b"


def test_the_one_cell_characters_are_one_cell_for_rich():
    chars = [chr(c) for c in (*range(0x20, 0x7f), *range(0xa0, 0x100), 0x2022, 0x2026,
                              *range(0x2190, 0x2194), *range(0x2500, 0x25a0),
                              *range(0x2800, 0x2900))]
    assert all(panels._ONE_CELL_EACH.fullmatch(c) for c in chars if c != "\u00ad")
    assert [c for c in chars if cell_len(c) != 1 and panels._ONE_CELL_EACH.fullmatch(c)] == []
    assert not any(panels._ONE_CELL_EACH.fullmatch(c) for c in WIDE)


def test_fitted_equals_truncate():
    rng = random.Random(26)
    for _ in range(3000):
        text = Text(no_wrap=True, overflow="ellipsis")
        for _ in range(rng.randrange(0, 5)):
            text.append("".join(rng.choice(DRAWN + (WIDE if rng.random() < 0.2 else ""))
                                for _ in range(rng.randrange(0, 12))),
                        style=rng.choice([None, "bold", "grey62"]))
        width = rng.randrange(0, 40)
        reference = text.copy()
        reference.truncate(width, overflow="ellipsis", pad=True)
        ours = panels.fitted(text.copy(), width)
        assert (ours.plain, ours.spans) == (reference.plain, reference.spans), (text, width)
        assert ours.cell_len == reference.cell_len
