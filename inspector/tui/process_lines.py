"""Who is doing it, as lines (pure: no Textual here): the Overview's processes panel.

The smallest form is one line each for the top CPU, memory and IO process, with the D-state
count in the panel's title; with more rows, lists side by side (top CPU | memory | IO | D
state from 160 columns, two columns from 100) or one under the other.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from rich.text import Text

from inspector.live.processes import SORT_VALUE, ProcessRate, SortKey
from inspector.model import Unknown
from inspector.text.escapes import visible
from inspector.tui.panels import DIM, Ctx, cut, fitted, level_style, line, reason_line
from inspector.widgets import units

PROCESS_MIN_ROWS = 3         # top CPU, top memory, top IO: one line each


def cpu_value(p: ProcessRate) -> str:
    return f"{p.cpu_pct:.0f}%" if p.cpu_pct >= 10 else f"{p.cpu_pct:.1f}%"


def mem_value(p: ProcessRate) -> str:
    return units.size(p.mem_kib * 1024)


def io_value(p: ProcessRate) -> str:
    return units.bytes_s(p.io_bytes_s)


def dstate_value(p: ProcessRate) -> str:
    return f"{p.dstate_s:.0f} s"


# (sort key, label, value text, whether the process counts in this list)
LISTS: tuple[tuple[SortKey, str, Callable[[ProcessRate], str], Callable[[ProcessRate], bool]], ...] = (
    (SortKey.CPU, "CPU%", cpu_value, lambda p: p.cpu_pct > 0),
    (SortKey.MEM, "memory", mem_value, lambda p: p.mem_kib > 0),
    (SortKey.IO, "IO/s", io_value, lambda p: p.io_bytes_s > 0),
    (SortKey.DSTATE, "in D", dstate_value, lambda p: p.dstate_s > 0 or p.state == "D"),
)
NOTHING = {SortKey.CPU: "no process on a CPU", SortKey.MEM: "no process",
           SortKey.IO: "no process reading or writing",
           SortKey.DSTATE: "no task in uninterruptible sleep"}


ONE_LINE_LABEL = {SortKey.CPU: "cpu", SortKey.MEM: "mem", SortKey.IO: "io",
                  SortKey.DSTATE: "D"}


def top_by(procs: list[ProcessRate], key: SortKey, n: int) -> list[ProcessRate]:
    """sort_processes(procs, key, n) without sorting them all: the panel wants a few of a
    thousand, every second."""
    value = FAST_VALUE.get(key) or SORT_VALUE[key]
    return heapq.nlargest(n, procs, key=value)     # ties: the sampler's order (by CPU)


FAST_VALUE = {SortKey.CPU: attrgetter("cpu_pct"), SortKey.DSTATE: attrgetter("dstate_s")}


def processes_of(ctx: Ctx) -> list[ProcessRate] | Unknown | None:
    view = ctx.view
    return None if view is None else view.processes


def dstate_note(view: Any) -> str:
    """The D-state count for a title: "2 in D state, longest 12 s (dd)"."""
    dstate = getattr(view, "dstate", None)
    if not isinstance(dstate, list):
        return ""
    if not dstate:
        return "none in D state"
    longest = max(dstate, key=lambda d: d.seconds)
    return f"{len(dstate)} in D state, longest {longest.seconds:.0f} s ({one_line(longest.comm)})"


def list_columns(width: int) -> int:
    """How many lists stand side by side at `width`: 4 from 160 columns, 2 from 100."""
    return 4 if width >= 160 else 2 if width >= 100 else 1


def processes_panel(ctx: Ctx, width: int, rows: int) -> list[Text]:
    procs = processes_of(ctx)
    if isinstance(procs, Unknown):
        return [reason_line(procs)]
    if procs is None:
        return [reason_line((ctx.reason or "no process figures yet") if ctx.view is None
                            else "not sampled")]
    columns = list_columns(width)
    if rows < (5 if columns > 1 else 8):
        # one line each: the top CPU, memory and IO process (and the longest in D)
        return [top_line(procs, key, label, value, counts, width)
                for key, label, value, counts in LISTS][:max(1, rows)]
    if columns == 1:
        return _stacked(procs, width, rows)
    col_w = (width - (columns - 1)) // columns
    if columns == 4:
        cols = [process_list(procs, spec, col_w, rows) for spec in LISTS]
    else:
        cols = [_joined(procs, LISTS[0], LISTS[2], col_w, rows),
                _joined(procs, LISTS[1], LISTS[3], col_w, rows)]
    height = max(len(c) for c in cols)
    out = []
    for y in range(height):
        row = Text(no_wrap=True)
        for i, col in enumerate(cols):
            if i:
                row.append(" ")
            row.append_text(fitted(col[y] if y < len(col) else Text(""), col_w))
        out.append(row)
    return out


def processes_wanted(ctx: Ctx, width: int) -> int:
    """Rows the lists can fill at `width`: each list's header and the processes it counts
    (a kernel thread has no memory, an idle process no CPU), laid out as processes_panel
    lays them out. One line when the figures are unknown."""
    procs = processes_of(ctx)
    if not isinstance(procs, list):
        return 1
    global _COUNTED
    if _COUNTED[0] is not procs:     # repaints in one second share one sample's list
        _COUNTED = (procs, [max(1, min(LIST_ROWS_MAX, sum(1 for p in procs if counts(p))))
                            for _, _, _, counts in LISTS])
    cpu, mem, io, dstate = (1 + n for n in _COUNTED[1])
    columns = list_columns(width)
    natural = (max(cpu, mem, io, dstate) if columns == 4
               else max(cpu + io, mem + dstate) if columns == 2 else cpu + mem + io + dstate)
    return max(PROCESS_MIN_ROWS, natural)


LIST_ROWS_MAX = 200
_COUNTED: tuple[object, list[int]] = (None, [])


def top_line(procs: list[ProcessRate], key: SortKey, label: str,
             value: Callable[[ProcessRate], str], counts: Callable[[ProcessRate], bool],
             width: int) -> Text:
    top = top_by([p for p in procs if counts(p)], key, 1)
    head = line((f"{ONE_LINE_LABEL[key]:<5}", "bold"))
    if not top:
        return head.append(NOTHING[key], style=DIM)
    return head.append_text(_entry(top[0], value(top[0]), key, max(0, width - 5)))


def process_list(procs: list[ProcessRate], spec: tuple, width: int, rows: int) -> list[Text]:
    """A column: its header (the figure's name over the figures), then the processes."""
    key, label, value, counts = spec
    head = line((f"{label:>9} ", "bold"), (f"{'pid':>7} {'user':<8} command", DIM))
    chosen = top_by([p for p in procs if counts(p)], key, max(1, rows - 1))
    if not chosen:
        return [head, line((NOTHING[key], DIM))]
    return [head] + [_entry(p, value(p), key, width).copy() for p in chosen]


_ENTRIES: dict[tuple, Text] = {}      # entries drawn lately: most lists change little a second
ENTRIES_KEPT = 2000


def _entry(p: ProcessRate, figure: str, key: SortKey, width: int) -> Text:
    """One process's line in a list (shared: callers copy before changing it)."""
    cache_key = (p.pid, figure, key, width, p.user, p.cmdline, p.comm)
    text = _ENTRIES.get(cache_key)
    if text is None:
        if len(_ENTRIES) >= ENTRIES_KEPT:
            _ENTRIES.clear()
        text = _ENTRIES[cache_key] = _draw_entry(p, figure, key, width)
    return text


def _draw_entry(p: ProcessRate, figure: str, key: SortKey, width: int) -> Text:
    style = ""
    if key is SortKey.CPU:
        style = level_style(p.cpu_pct, 80, 100)
    elif key is SortKey.DSTATE:
        style = level_style(p.dstate_s, 5, 30)
    text = line((f"{figure:>9} ", style), f"{p.pid:>7} ",
                (f"{cut(one_line(p.user), 8):<8} ", DIM))
    text.append(cut(short_command(p), max(0, width - text.cell_len)))
    return text


def one_line(text: str) -> str:
    """Host text for one terminal line: controls escaped (inspector.text.escapes), a newline in an
    argument shown as \\n."""
    return visible(text).replace("\n", "\\n").replace("\t", " ")


def short_command(p: ProcessRate) -> str:
    """The command line with its program's directory left out (`python3 -m x`, not
    `/usr/lib/python3.11/bin/python3 -m x`): the name and the arguments tell processes apart."""
    command = one_line(p.cmdline)
    if not command or command.startswith("["):
        return command or one_line(p.comm)
    program, _, args = command.partition(" ")
    if "/" in program and not program.endswith("/"):
        program = program.rsplit("/", 1)[1]
    return f"{program} {args}" if args else program


def _joined(procs: list[ProcessRate], upper: tuple, lower: tuple, width: int,
            rows: int) -> list[Text]:
    """Two lists in one column: the lower one (IO, D state) takes the rows it has, at least
    two, and the upper one (CPU, memory) the rest; rows the upper one cannot fill go back to
    the lower one."""
    lower_lines = process_list(procs, lower, width, max(2, rows // 3))
    upper_lines = process_list(procs, upper, width, max(2, rows - len(lower_lines)))
    if len(upper_lines) + len(lower_lines) < rows:
        lower_lines = process_list(procs, lower, width, max(2, rows - len(upper_lines)))
    return upper_lines + lower_lines


def _stacked(procs: list[ProcessRate], width: int, rows: int) -> list[Text]:
    """Narrow: the four lists one under the other; IO and D state take what they have (two
    rows at least), CPU and memory share the rest, and what those cannot fill goes back to
    IO, then D state."""
    io = process_list(procs, LISTS[2], width, max(2, rows // 4))
    dstate = process_list(procs, LISTS[3], width, max(2, rows // 4))
    rest = max(4, rows - len(io) - len(dstate))
    cpu = process_list(procs, LISTS[0], width, max(2, rest // 2))
    mem = process_list(procs, LISTS[1], width, max(2, rest - len(cpu)))
    spare = rows - len(cpu) - len(mem) - len(io) - len(dstate)
    if spare > 0:
        io = process_list(procs, LISTS[2], width, len(io) + spare)
        spare = rows - len(cpu) - len(mem) - len(io) - len(dstate)
    if spare > 0:
        dstate = process_list(procs, LISTS[3], width, len(dstate) + spare)
    return (cpu + mem + io + dstate)[:rows]


def tasks_text(view: Any) -> list[Text]:
    """Every D-state task and every process doing IO, for the `t` details (no row limit)."""
    out: list[Text] = []
    procs = getattr(view, "processes", None)
    if isinstance(procs, list):
        out += process_list(procs, LISTS[2], 200, 1000) + [Text("")]
    dstate = getattr(view, "dstate", None)
    out.append(line(("D state", "bold"), ("      pid command          in D  waiting in", DIM)))
    if isinstance(dstate, Unknown) or dstate is None:
        out.append(reason_line("not sampled" if dstate is None else dstate))
    elif not dstate:
        out.append(line((NOTHING[SortKey.DSTATE], DIM)))
    for d in sorted(dstate if isinstance(dstate, list) else [], key=lambda d: -d.seconds):
        wait = one_line(d.wait or (d.wchan if isinstance(d.wchan, str) else "?"))
        out.append(line(f"{d.pid:>13} ", (f"{one_line(d.comm)[:16]:<16}", "bold"),
                        (f" {d.seconds:4.0f} s", level_style(d.seconds, 5, 30)), f"  {wait}",
                        (f"  ({d.device})" if d.device else "", DIM)))
    return out
