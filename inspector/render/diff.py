"""The human form of `inspector diff`: one entry per change, the full path with identities
(storage.health[device=hioa].reserves_pct), values formatted for people, fitted to the terminal.

An entry is one line when it fits: `MARK  PATH  BEFORE -> AFTER  (note)`. When it does not, the
path gets its own line(s) (folded at dots, never cut) and the value and the note are wrapped
under it, indented, so nothing is lost at 80 columns."""
from __future__ import annotations

import json
import math
import textwrap
from typing import Any

from rich.text import Text

from inspector.diff import Change, DiffResult

MARK_WIDTH = 11            # "REGRESSION " and the kinds below it
INDENT = " " * MARK_WIDTH
MARK_STYLES = {"REGRESSION": "bold white on red", "worse": "red", "better": "green",
               "added": "cyan", "removed": "yellow"}
# Fields worth naming when a whole record (a device, a NIC, a finding) appears or disappears.
SUMMARY_FIELDS = ("level", "message", "type", "kind", "family", "size_bytes", "model", "driver",
                  "mtu", "state", "operstate", "verdict", "array_state", "degraded", "value",
                  "avg_us", "p99_us")
MAX_LIST_ITEMS = 8


# ---------------------------------------------------------------------------- values
def _iec(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def _number(value: float) -> str:
    if isinstance(value, int) or (math.isfinite(value) and float(value).is_integer()):
        return str(int(value))
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:.1f}"
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if text not in ("0", "-0") else f"{value:.2g}"


def format_value(value: Any, key: str = "") -> str:
    """A model value as a person reads it: units from the key's suffix, rounded floats, lists
    joined compactly, records summarised by their telling fields, unknowns with their reason."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if key.endswith("_per_s"):       # a rate, not seconds: ops_per_s, bytes_per_s
            unit = key[:-len("_per_s")]
            if unit.endswith("bytes"):
                return f"{_iec(value)}/s"
            return f"{_number(value)} {unit.rsplit('_', 1)[-1]}/s"
        if key.endswith("bytes") or key in ("size", "bytes"):
            return _iec(value)
        if key.endswith("_kib"):
            return _iec(value * 1024)
        if key.endswith("_us"):
            return f"{value / 1000:.2f} ms" if abs(value) >= 1000 else f"{_number(value)} us"
        if key.endswith("_s") or key.endswith("_seconds"):
            return f"{_number(value)} s"
        if key.endswith("_pct") or key.endswith("_percent"):
            return f"{_number(value)}%"
        return _number(value)
    if isinstance(value, str):
        return value or '""'
    if isinstance(value, list):
        if not value:
            return "none"
        items = [_list_item(v) for v in value[:MAX_LIST_ITEMS]]
        more = f", +{len(value) - MAX_LIST_ITEMS} more" if len(value) > MAX_LIST_ITEMS else ""
        return ", ".join(items) + more
    if isinstance(value, dict):
        if not value:
            return "none"
        if set(value) == {"unknown"}:
            return f"unknown ({value['unknown']})"
        return _record(value)
    return str(value)


def _list_item(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("name", "device", "server", "kind", "code"):
            if isinstance(value.get(key), (str, int)) and not isinstance(value.get(key), bool):
                return str(value[key])
        return "{…}"
    return format_value(value)


def _record(value: dict) -> str:
    parts = []
    for key in SUMMARY_FIELDS:
        v = value.get(key)
        if v is None or isinstance(v, (dict, list)):
            continue
        label = key[:-len("_bytes")] if key.endswith("_bytes") else key
        parts.append(f"{label} {format_value(v, key)}")
    if parts:
        return ", ".join(parts)
    scalars = [f"{k} {format_value(v, k)}" for k, v in value.items()
               if v is not None and not isinstance(v, (dict, list))][:6]
    return ", ".join(scalars) if scalars else json.dumps(value, sort_keys=True)[:60] + "…"


def _key_of(change: Change) -> str:
    from inspector.diff import _last_key
    return _last_key(change.path)


def change_text(change: Change) -> str:
    """What happened to the value: "1500 -> 9000", "added: ...", "removed (was: ...)"."""
    key = _key_of(change)
    if change.category == "findings":
        f = change.after if change.after is not None else change.before
        return "" if change.note else format_value(f, key)
    before, after = format_value(change.before, key), format_value(change.after, key)
    if before == after and change.before != change.after:   # rounding hid the difference
        before, after = str(change.before), str(change.after)
    if change.kind == "added" or (change.before is None and change.after is not None):
        return f"now: {after}"
    if change.kind == "removed" or (change.after is None and change.before is not None):
        return f"was: {before}"
    return f"{before} -> {after}"


def display_path(change: Change) -> str:
    return f"finding {change.path}" if change.category == "findings" else change.path


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
