"""inspector.render.rows: label/value rows print host strings as they read, never as markup."""
from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from inspector.render.rows import add_row, label_grid


def _text(renderable, width: int = 60) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(renderable)
    return buf.getvalue()


def test_strings_are_plain_text_not_markup():
    grid = label_grid()
    add_row(grid, "[bold]sdb[/bold]", "rx-csum on [fixed]")
    add_row(grid, "nvme0n1", Text("kept as given", style="yellow"))
    out = _text(grid)
    assert "[bold]sdb[/bold]  rx-csum on [fixed]" in out
    assert "nvme0n1" in out and "kept as given" in out


def test_label_never_wraps_and_the_value_wraps_under_itself():
    grid = label_grid(gap=1)
    add_row(grid, "first server lost", "word " * 20)
    lines = _text(grid, width=40).splitlines()
    assert lines[0].startswith("first server lost word")
    assert all(line.startswith(" " * len("first server lost ")) for line in lines[1:])
