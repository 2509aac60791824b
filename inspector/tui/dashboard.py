"""The Overview's live panels laid out for a width and the rows in view (pure: no Textual).

Every panel is always there: CPU, memory with load and pressure, filesystems, disks, NICs,
processes. `paint(ctx, width, rows)` fits them into `rows` when their smallest forms fit (a
line of PSI, a line of filesystem fill, one line each for the top CPU, memory and IO process,
the D-state count in the title) and returns more lines when they do not: the Overview scrolls.
Spare rows go first to the panels' natural forms, then to the CPU chart up to what its data
needs (a state that stayed at zero keeps one row), and the rest to the lists (disks, then
processes), so no panel is padded with rows of nothing.

From 120 columns (and rows for it), framed panels in two columns (CPU over disks | memory,
filesystems, NICs) above the processes; below, one column under title rules.
"""
from __future__ import annotations

from rich.text import Text

from inspector.tui.panels import (
    CPU_SERIES,
    DIM,
    MEMORY_ROWS,
    Ctx,
    cpu_chart_stretches,
    cpu_panel,
    cpu_rows_wanted,
    disk_rows,
    disks_panel,
    disks_wanted,
    filesystems_panel,
    filesystems_wanted,
    fitted,
    memory_panel,
    nics_panel,
    nics_wanted,
    stack_top,
)
from inspector.tui.process_lines import (
    PROCESS_MIN_ROWS,
    dstate_note,
    processes_panel,
    processes_wanted,
)

__all__ = ["Ctx", "paint", "disk_rows", "stack_top", "TITLES"]

WIDE_MIN = (120, 24)     # columns, and rows in view, for the framed two-column layout
FRAME = "grey50"
CPU_MIN = 1 + len(CPU_SERIES)   # the chart's smallest framed form: figures, one row a state
TITLES = ("CPU", "Memory · load · pressure", "Filesystems", "Disks", "Network", "Processes")


def paint(ctx: Ctx, width: int, rows: int) -> list[Text]:
    """The panels for `width` columns and `rows` rows in view (more lines when even their
    smallest forms do not fit)."""
    if width >= WIDE_MIN[0] and rows >= WIDE_MIN[1]:
        return _paint_wide(ctx, width, rows)
    return _paint_column(ctx, width, rows)


def _note(ctx: Ctx) -> str:
    view = ctx.view
    return f"every {view.interval:.0f} s" if view is not None and view.interval else ""


# ----------------------------------------------------------------------------- frames
def boxed(title: str, lines: list[Text], width: int, height: int, note: str = "") -> list[Text]:
    """A rounded frame `width` x `height` with the title (and a note) in its top border."""
    inner = max(0, width - 2)
    top = Text("╭─ ", style=FRAME)
    top.append(title, style="bold")
    top.append(" ", style=FRAME)
    if note and top.cell_len + len(note) + 3 < width:
        top.append(note + " ", style=DIM)
    top.append("─" * max(0, width - top.cell_len - 1) + "╮", style=FRAME)
    top.truncate(width, overflow="crop", pad=True)
    out = [top]
    body = lines[:max(0, height - 2)]
    for ln in body + [Text("")] * max(0, height - 2 - len(body)):
        out.append(Text("│", style=FRAME).append_text(fitted(ln, inner)).append("│", style=FRAME))
    out.append(Text("╰" + "─" * inner + "╯", style=FRAME))
    return out[:height]


def titled(title: str, lines: list[Text], width: int, note: str = "") -> list[Text]:
    """The one-column frame: a title rule, then the lines."""
    head = Text("─ ", style=FRAME).append(title, style="bold")
    if note:
        head.append(f" {note}", style=DIM)
    head.append(" " + "─" * max(0, width - head.cell_len - 1), style=FRAME)
    head.truncate(width, overflow="crop", pad=True)
    return [head] + [fitted(ln, width) for ln in lines]


def titled_with_header(title: str, lines: list[Text], width: int) -> list[Text]:
    """A list panel whose first line is its column header: the title takes the header's
    first cells, so the header costs no row of its own."""
    if not lines:
        return titled(title, lines, width)
    header = lines[0].plain
    lead = f"─ {title} "
    if len(header) <= len(lead) or header[:len(lead)].strip() not in ("disk", "nic"):
        return titled(title, lines, width)
    head = Text("─ ", style=FRAME).append(title, style="bold").append(" ")
    head.append(header[len(lead):].rstrip(), style=DIM)
    head.append(" " + "─" * max(0, width - head.cell_len - 1), style=FRAME)
    head.truncate(width, overflow="crop", pad=True)
    return [head] + [fitted(ln, width) for ln in lines[1:]]


def hjoin(columns: list[list[Text]], widths: list[int], height: int) -> list[Text]:
    out = []
    for y in range(height):
        row = Text(no_wrap=True)
        for col, w in zip(columns, widths):
            row.append_text(fitted(col[y] if y < len(col) else Text(""), w))
        out.append(row)
    return out


def split(width: int, shares: list[int]) -> list[int]:
    total = sum(shares)
    widths = [width * s // total for s in shares]
    widths[-1] = width - sum(widths[:-1])
    return widths


# ----------------------------------------------------------------------------- wide
def _paint_wide(ctx: Ctx, width: int, rows: int) -> list[Text]:
    left_w, right_w = split(width, [1, 1])
    li, ri = left_w - 2, right_w - 2             # inside the frames
    fs_rows, nic_rows = filesystems_wanted(ctx), nics_wanted(ctx)
    disk_tops, disk_all = disks_wanted(ctx)
    mem_rows = MEMORY_ROWS
    # what the processes panel can fill: one line when the figures are unknown
    procs_fill = processes_wanted(ctx, width - 2)
    procs_min = min(PROCESS_MIN_ROWS, procs_fill) + 2
    # rows short: the smallest forms of the lists first (one line of filesystems, the disks
    # without their members), then memory in two lines
    disks_rows = disk_all

    def right_h() -> int:
        return (mem_rows + 2) + (fs_rows + 2) + (nic_rows + 2)

    def left_min() -> int:
        return CPU_MIN + 2 + disks_rows + 2
    for shrink in ("fs", "disks", "mem"):
        if max(right_h(), left_min()) + procs_min <= rows:
            break
        if shrink == "fs":
            fs_rows = 1
        elif shrink == "disks":
            disks_rows = disk_tops
        else:
            mem_rows = 2
    cpu_wanted = cpu_rows_wanted(ctx, li)
    procs_share = max(procs_min, min(rows // 3, procs_fill) + 2)
    band = max(right_h(), left_min(), min(cpu_wanted + 2 + disks_rows + 2, rows - procs_share))
    if cpu_chart_stretches(ctx, li):   # rows the processes cannot fill go to the chart
        band = max(band, rows - (procs_fill + 2))
    cpu_h = band - (disks_rows + 2)
    mem_h = band - (fs_rows + 2) - (nic_rows + 2)      # a used % chart takes what is over
    left = (boxed("CPU", cpu_panel(ctx, li, cpu_h - 2), left_w, cpu_h, _note(ctx))
            + boxed("Disks", disks_panel(ctx, li, disks_rows), left_w, disks_rows + 2,
                    "2 Storage"))
    right = (boxed("Memory · load · pressure", memory_panel(ctx, ri, mem_h - 2), right_w, mem_h)
             + boxed("Filesystems", filesystems_panel(ctx, ri, fs_rows), right_w, fs_rows + 2)
             + boxed("Network", nics_panel(ctx, ri, nic_rows), right_w, nic_rows + 2,
                     "4 Network"))
    top = hjoin([left, right], [left_w, right_w], band)
    procs_rows = max(procs_min - 2, min(rows - band - 2, procs_fill))
    procs = processes_panel(ctx, width - 2, procs_rows)
    bottom = boxed("Processes", procs, width, len(procs) + 2, _procs_note(ctx))
    return top + bottom


def _procs_note(ctx: Ctx) -> str:
    note = dstate_note(ctx.view)
    return f"{note} · 7 Processes" if note else "7 Processes"


# ----------------------------------------------------------------------------- one column
def _paint_column(ctx: Ctx, width: int, rows: int) -> list[Text]:
    """Each panel under a title rule at its smallest form; spare rows to the natural forms
    (memory, filesystems, disk members), then the CPU chart, then the processes."""
    disk_tops, disk_all = disks_wanted(ctx)
    procs_fill = processes_wanted(ctx, width)    # one line when the figures are unknown
    size = {"cpu": 2, "mem": 2, "fs": 1, "disks": disk_tops, "nics": nics_wanted(ctx),
            "procs": min(PROCESS_MIN_ROWS, procs_fill)}
    titles = len(size)
    # the disk and NIC headers share the title row
    spare = rows - titles - sum(size.values()) + 2
    procs_share = min(max(PROCESS_MIN_ROWS, rows // 3), procs_fill)
    for key, natural in (("mem", MEMORY_ROWS), ("fs", filesystems_wanted(ctx)),
                         ("disks", disk_all), ("procs", procs_share),
                         ("cpu", cpu_rows_wanted(ctx, width))):
        grow = natural - size[key]
        if 0 < grow <= spare:
            size[key] = natural
            spare -= grow
        elif key == "cpu" and spare > 0 and size[key] + spare >= CPU_MIN:
            size[key] += spare
            spare = 0
    if spare > 0:
        grown = min(size["procs"] + spare, procs_fill)
        spare -= grown - size["procs"]
        size["procs"] = grown
    if spare > 0 and size["cpu"] >= CPU_MIN and cpu_chart_stretches(ctx, width):
        size["cpu"] += spare        # rows the processes cannot fill
    out = titled("CPU", cpu_panel(ctx, width, size["cpu"]), width, _note(ctx))
    out += titled("Memory · load · pressure", memory_panel(ctx, width, size["mem"]), width)
    out += titled("Filesystems", filesystems_panel(ctx, width, size["fs"]), width)
    out += titled_with_header("Disks", disks_panel(ctx, width, size["disks"]), width)
    out += titled_with_header("Network", nics_panel(ctx, width, size["nics"]), width)
    out += titled("Processes", processes_panel(ctx, width, size["procs"]), width,
                  _procs_note(ctx))
    return out
