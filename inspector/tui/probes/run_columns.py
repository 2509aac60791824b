"""The Probes screen's runs table: its columns for a terminal width and the probe cell cut to
the room the others leave (pure: no Textual here).

Every figure is the whole run's. From 100 columns the headers say so ("run p50"); below,
they are short and the max goes (the run's chart marks it), so that at 80 columns the target
stays readable: `memcached 127.0.0.1:11211`, not `memcached …9`.
"""
from __future__ import annotations

NARROW_BELOW = 100
# key, header from NARROW_BELOW columns, header below (None: not shown), widest value shown
RUN_COLUMNS = (("run", "#", "#", 3), ("probe", "probe", "probe", 0),
               ("state", "state", "state", 8), ("err", "err", "err", 3),
               ("ops", "ops", "ops", 7), ("ops/s", "run ops/s", "ops/s", 5),
               ("p50", "run p50", "p50", 6), ("p99", "run p99", "p99", 6),
               ("max", "run max", None, 6))
CELL_PADDING = 2          # DataTable's cell padding, both sides
SCROLLBAR = 2
PROBE_MIN = 12


def columns_for(width: int) -> list[tuple[str, str]]:
    """(key, header) of the columns shown at `width` terminal columns."""
    if width >= NARROW_BELOW:
        return [(key, label) for key, label, _, _ in RUN_COLUMNS]
    return [(key, short) for key, _, short, _ in RUN_COLUMNS if short is not None]


def probe_room(width: int) -> int:
    """Characters the probe cell may take beside the other columns at their widest."""
    shown = dict(columns_for(width))
    others = sum(max(len(shown[key]), widest) + CELL_PADDING
                 for key, _, _, widest in RUN_COLUMNS if key in shown and key != "probe")
    return max(PROBE_MIN, width - others - CELL_PADDING - SCROLLBAR)


def probe_cell(kind: str, target: str, room: int) -> str:
    """`kind target` in `room` characters, the target cut where it says least."""
    return f"{kind} {short_target(target, max(1, room - len(kind) - 1))}"


def short_target(target: str, room: int) -> str:
    """`target` in `room` characters: a host:port keeps its port and loses the middle of the
    host; a path keeps its last part and loses the middle of the rest; anything else its
    middle."""
    if len(target) <= room:
        return target
    host, sep, port = target.rpartition(":")
    if sep and port.isdigit() and host and not target.startswith("/"):
        if room - len(port) - 1 >= 3:
            return f"{_middle_cut(host, room - len(port) - 1)}:{port}"
    elif "/" in target.rstrip("/"):
        head, _, last = target.rstrip("/").rpartition("/")
        if room - len(last) - 1 >= 3:
            return f"{_middle_cut(head, room - len(last) - 1)}/{last}"
    return _middle_cut(target, room)


def _middle_cut(text: str, room: int) -> str:
    """`text` in `room` characters with an ellipsis for what was cut from its middle."""
    if len(text) <= room:
        return text
    if room <= 1:
        return "…"[:room]
    keep = room - 1
    front = (keep + 1) // 2
    return f"{text[:front]}…{text[len(text) - (keep - front):]}"
