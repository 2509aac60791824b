"""The human form of `inspector diff`: one entry per change, the full path with identities
(storage.health[device=hioa].reserves_pct), values formatted for people, fitted to the terminal.

An entry is one line when it fits: `MARK  PATH  BEFORE -> AFTER  (note)`. When it does not, the
path gets its own line(s) (folded at dots, never cut) and the value and the note are wrapped
under it, indented, so nothing is lost at 80 columns."""
from __future__ import annotations

import textwrap

from rich.text import Text

from inspector.compare.diff import Change, DiffResult
from inspector.compare.diff_text import change_text, display_path, format_value

__all__ = ["change_lines", "format_value", "render_diff"]


MARK_WIDTH = 11            # "REGRESSION " and the kinds below it
INDENT = " " * MARK_WIDTH
MARK_STYLES = {"REGRESSION": "bold white on red", "worse": "red", "better": "green",
               "added": "cyan", "removed": "yellow"}


# ---------------------------------------------------------------------------- layout
def _fold_path(path: str, width: int) -> list[str]:
    """Fold a long path at dots (inside brackets too), never dropping a character."""
    avail = max(20, width - MARK_WIDTH)
    if len(path) <= avail:
        return [path]
    pieces, current = [], ""
    for part in _split_keep_dots(path):
        if current and len(current) + len(part) > avail:
            pieces.append(current)
            current = "  " + part
        else:
            current += part
    pieces.append(current)
    out = []
    for piece in pieces:         # a single segment longer than the line: hard split
        while len(piece) > avail:
            out.append(piece[:avail])
            piece = "  " + piece[avail:]
        out.append(piece)
    return out


def _split_keep_dots(path: str) -> list[str]:
    parts, start = [], 0
    for i, ch in enumerate(path):
        if ch in ".[" and i > start:
            parts.append(path[start:i])
            start = i
    parts.append(path[start:])
    return parts


def change_lines(change: Change, width: int) -> list[tuple[str, str]]:
    """(mark, text) lines for one change; mark is "" on continuation lines."""
    mark = "REGRESSION" if change.regression else change.kind
    path = display_path(change)
    value = change_text(change)
    note = f"— {change.note}" if change.note else ""
    one_line = "  ".join(p for p in (path, value, note) if p)
    if MARK_WIDTH + len(one_line) <= width:
        return [(mark, one_line)]
    lines = []
    for i, piece in enumerate(_fold_path(path, width)):
        lines.append((mark if i == 0 else "", piece))
    avail = max(20, width - MARK_WIDTH - 2)
    detail = "  ".join(p for p in (value, note) if p)
    if len(detail) > avail:      # value and note each on their own lines
        detail = "\n".join(p for p in (value, note) if p)
    for text in detail.split("\n"):
        for piece in textwrap.wrap(text, avail, break_long_words=True, break_on_hyphens=False,
                                   subsequent_indent="  "):
            lines.append(("", "  " + piece))
    return lines


def render_diff(result: DiffResult, width: int) -> list[Text]:
    """The whole human diff as styled lines, each at most `width` cells."""
    width = max(width, 40)
    out: list[Text] = []
    for label, name in (("before: ", result.before), ("after:  ", result.after)):
        for piece in textwrap.wrap(label + name, width, break_long_words=True,
                                   subsequent_indent=" " * len(label)):
            out.append(Text(piece, style="bold"))
    if not result.changes:
        out.append(Text("No changes.", style="green"))
        return out
    order = sorted(result.changes, key=lambda c: (not c.regression, c.category, c.path))
    for change in order:
        for mark, text in change_lines(change, width):
            line = Text()
            line.append(f"{mark:<{MARK_WIDTH - 1}}", style=MARK_STYLES.get(mark, "")) if mark \
                else line.append(" " * (MARK_WIDTH - 1))
            line.append(" " + text)
            out.append(line)
    regressions = len(result.regressions)
    out.append(Text(f"{_plural(len(result.changes), 'change')}, "
                    f"{_plural(regressions, 'regression')}",
                    style="bold red" if regressions else "bold"))
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
