"""The Overview's live panels as lines (pure: no Textual here): CPU, memory with load and
pressure, filesystem fill, disks, NICs.

Each panel draws into `rows` lines and returns only the lines it has something for (never
padding): the layout (inspector.tui.dashboard) asks each for its smallest form (`rows=1` or 2:
one line of PSI, of filesystem fill ...) and its natural one, and gives the spare rows to the
charts up to what their data needs and to the lists.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from inspector.config import UTIL_CRIT_PCT, UTIL_WARN_PCT
from inspector.model import Unknown, known
from inspector.tui.live import DiskRate, LiveView
from inspector.tui.trends import CpuFigure, Trends, cpu_series, disk_series, nic_series
from inspector.widgets import units
from inspector.widgets.spark import area, bar, sparkline

DIM = "grey62"
SPARK = "cyan"
HIDDEN_IDLE_KINDS = ("loop", "zram", "rom")
BUSY_UTIL = 5.0         # %util from which a disk counts as busy (sorted first)
CPU_ROWS_MAX = 4        # chart rows per CPU state with something to show
CPU_LABEL_W = 10


@dataclass
class Ctx:
    """What every panel may read."""
    view: LiveView | None
    trends: Trends
    reason: str | None            # why there is no live view ("capture: no live data" ...)
    report: Any = None            # the discovery report (disk sizes, NICs on a capture)


# ----------------------------------------------------------------------------- helpers
def line(*parts: tuple[str, str] | str | Text) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for part in parts:
        if isinstance(part, Text):
            text.append_text(part)
        elif isinstance(part, str):
            text.append(part)
        else:
            text.append(*part)
    return text


def fit(text: Text, width: int) -> Text:
    """A copy of `text` cut (…) or padded to `width` cells."""
    return fitted(text.copy(), width)


# characters rich counts one cell wide, that the panels draw: ASCII, Latin-1's printable ones
# but the soft hyphen, arrows, bullets and ellipsis, box drawing, blocks, braille
_ONE_CELL_EACH = re.compile("[\x20-\x7e\xa0-\xac\xae-\xff\u2022\u2026\u2190-\u2193"
                            "\u2500-\u259f\u2800-\u28ff]*")


def fitted(text: Text, width: int) -> Text:
    """`text` itself cut or padded to `width` cells: for a line painted just now that nothing
    else holds (no copy, every line of every frame). A line of one-cell characters is measured
    by its length: rich measures a string it has not seen character by character (the charts'
    lines are new every second)."""
    width = max(0, width)
    plain = text.plain
    if len(plain) <= width and _ONE_CELL_EACH.fullmatch(plain):
        if len(plain) < width:
            text.append(" " * (width - len(plain)))
        return text
    text.truncate(width, overflow="ellipsis", pad=True)
    return text


def cut(text: str, width: int) -> str:
    """`text` in at most `width` cells, its end replaced by … when cut."""
    if width <= 0:
        return ""
    return text if len(text) <= width else text[:width - 1] + "…"


def cut_left(text: str, width: int) -> str:
    """A path in at most `width` cells, its start replaced by … (the end names it)."""
    if width <= 0:
        return ""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def reason_line(reason: Any) -> Text:
    reason = str(reason.reason if isinstance(reason, Unknown) else reason)
    return line((reason, "yellow"))


def level_style(value: float | None, warn: float, crit: float) -> str:
    if value is None:
        return ""
    return "bold red" if value >= crit else "yellow" if value >= warn else ""


def spark_cell(values: Sequence[float | None], width: int, top: float | None = None,
               style: str = SPARK) -> tuple[str, str]:
    return (sparkline(values, width, top), style) if width > 0 else ("", "")


def await_text(disk: DiskRate) -> str:
    """iostat's await with its unit; a disk that served no request has no wait to show."""
    if not (disk.r_s or disk.w_s):
        return "-"
    if disk.await_ms is not None and disk.await_ms <= 0:
        return "0 µs"
    return units.latency_ms(disk.await_ms)


# ----------------------------------------------------------------------------- CPU
CPU_SERIES: tuple[tuple[CpuFigure, str], ...] = (("user", "usr"), ("system", "sys"), ("iowait", "iow"),
                                                  ("steal", "st"))
CPU_STYLES = {"user": "green", "system": "red", "iowait": "yellow", "steal": "magenta"}


def _cpu_style(key: str, now: float) -> str:
    if key == "iowait":
        return level_style(now, 10, 30)
    if key == "steal":
        return level_style(now, 2, 10)
    return ""


def cpu_rows_wanted(ctx: Ctx, width: int) -> int:
    """The rows the CPU chart's data needs at `width`: a state that stayed at zero over the
    samples in view gets its one row (its figure), the others CPU_ROWS_MAX, plus the figures
    line."""
    chart_w = max(0, width - CPU_LABEL_W)
    rows = 1
    for key, _ in CPU_SERIES:
        shown = list(ctx.trends.get(cpu_series(key)))[-chart_w:] if chart_w else []
        rows += CPU_ROWS_MAX if _peak(shown) > 0 else 1
    return rows


def cpu_chart_stretches(ctx: Ctx, width: int) -> bool:
    """Whether the CPU chart draws on every row it is given (a state with something to show),
    so rows no other panel can fill may go to it."""
    view = ctx.view
    chart_w = max(0, width - CPU_LABEL_W)
    if view is None or view.cpu is None or isinstance(view.cpu, Unknown) or not chart_w:
        return False
    return any(_peak(list(ctx.trends.get(cpu_series(key)))[-chart_w:]) > 0 for key, _ in CPU_SERIES)


def _peak(values: Sequence[float | None]) -> float:
    return max((v for v in values if v is not None), default=0.0)


def cpu_panel(ctx: Ctx, width: int, rows: int) -> list[Text]:
    view = ctx.view
    if view is None or view.cpu is None:
        return [reason_line(ctx.reason or "no CPU figures yet")]
    cpu = view.cpu
    if isinstance(cpu, Unknown):
        return [reason_line(cpu)]
    extra = line(("idle ", DIM), f"{cpu.idle:3.0f}%")
    if cpu.cpus:
        extra.append(f"  {cpu.cpus} CPUs", style=DIM)
    load = view.load
    if hasattr(load, "load1"):
        extra.append("  load ", style=DIM).append(f"{load.load1:.2f}")
    if rows < 2 + len(CPU_SERIES):
        figures = line()
        for key, short in CPU_SERIES:
            now = getattr(cpu, key)
            figures.append(f"{short} ", style=DIM).append(f"{now:4.1f}%  ",
                                                          style=_cpu_style(key, now))
        figures.append_text(extra)
        if rows <= 1:
            return [figures]
        busy = _busy_series(ctx.trends)
        return [figures, line(("busy      ", DIM), spark_cell(busy, max(0, width - 10), 100.0))]
    label_w = CPU_LABEL_W
    chart_w = max(0, width - label_w)
    # one row per state, the rest shared by the states that have something to draw
    # what the chart shows: the newest chart_w samples
    shown = {key: list(ctx.trends.get(cpu_series(key)))[-chart_w:] if chart_w else []
             for key, _ in CPU_SERIES}
    live = [key for key, _ in CPU_SERIES if _peak(shown[key]) > 0]
    spare = rows - 1 - len(CPU_SERIES)
    extra_rows = {key: 0 for key, _ in CPU_SERIES}
    for i in range(spare if live else 0):     # every row given is drawn on
        extra_rows[live[i % len(live)]] += 1
    out = [extra]
    for key, short in CPU_SERIES:
        values = shown[key]
        # scaled to the window's peak: the peak's column reaches the top row, so no row of
        # the chart is empty (a fixed 0-100 % left a small figure's rows blank)
        top = max(_peak(values), 0.1)
        now = getattr(cpu, key)
        height = 1 + extra_rows[key]
        for i, row in enumerate(area(values, chart_w, height, top)):
            if i == 0:
                label = line((f"{short:<4}", "bold"), (f"{now:4.1f}%", _cpu_style(key, now)))
            elif i == 1:
                label = line((f"  0-{top:.0f}%" if top >= 10 else f"  0-{top:.1f}%", DIM))
            else:
                label = line("")
            out.append(fit(label, label_w).append(row, style=CPU_STYLES[key]))
    return out


def _busy_series(trends: Trends) -> list[float | None]:
    series = [list(trends.get(cpu_series(k))) for k, _ in CPU_SERIES]
    n = min((len(s) for s in series), default=0)
    return [sum((s[len(s) - n + i] or 0.0) for s in series) for i in range(n)]


# ----------------------------------------------------------------------------- memory
MEMORY_ROWS = 8         # mem, swap, dirty, load, psi title, cpu, memory, io


def kib(n: int) -> str:
    return units.size(n * 1024)


def memory_panel(ctx: Ctx, width: int, rows: int) -> list[Text]:
    """Memory, swap, dirty pages, load and pressure: MEMORY_ROWS lines; in two lines (or one)
    when rows are short; a used % chart below when rows are to spare."""
    view = ctx.view
    if view is None:
        return [reason_line(ctx.reason or "no memory figures yet")]
    if rows < MEMORY_ROWS:
        return _memory_short(ctx, view, width, rows)
    out: list[Text] = []
    mem = view.memory
    gauge_w = max(4, min(20, width - 44))
    if hasattr(mem, "total_kib"):
        frac = mem.used_kib / mem.total_kib if mem.total_kib else None
        full, empty = bar(frac, gauge_w)
        used_pct = 100 * (frac or 0)
        out.append(line(("mem  ", "bold"), (full, level_style(used_pct, 85, 95) or "green"),
                        (empty, DIM), f" {used_pct:3.0f}% ",
                        f"{kib(mem.used_kib)}/{kib(mem.total_kib)}",
                        ("  avail ", DIM), kib(mem.available_kib),
                        ("  cache ", DIM), kib(mem.cached_kib + mem.buffers_kib)))
        if mem.swap_total_kib:
            sfrac = mem.swap_used_kib / mem.swap_total_kib
            full, empty = bar(sfrac, gauge_w)
            out.append(line(("swap ", "bold"), (full, level_style(100 * sfrac, 50, 80) or "green"),
                            (empty, DIM), f" {100 * sfrac:3.0f}% ",
                            f"{kib(mem.swap_used_kib)}/{kib(mem.swap_total_kib)}"))
        else:
            out.append(line(("swap ", "bold"), ("none configured", DIM)))
        out.append(line(("dirty ", DIM), kib(mem.dirty_kib), ("  writeback ", DIM),
                        kib(mem.writeback_kib)))
    elif mem is not None:
        out.append(line(("mem  ", "bold"), reason_line(mem)))
    load = view.load
    spark_w = max(0, width - 36)
    if hasattr(load, "load1"):
        out.append(line(("load ", "bold"), f"{load.load1:.2f} {load.load5:.2f} {load.load15:.2f}",
                        (f"  {load.runnable}/{load.threads} run  ", DIM),
                        spark_cell(ctx.trends.get("load1"), spark_w)))
    elif load is not None:
        out.append(line(("load ", "bold"), reason_line(load)))
    pressure = view.pressure
    if isinstance(pressure, dict):
        out.append(line(("psi  ", "bold"), ("some avg10 (full)", DIM)))
        for resource in ("cpu", "memory", "io"):
            p = pressure.get(resource)
            name = f"  {resource[:3]:<4}"
            if p is None or not hasattr(p, "some_avg10"):
                out.append(line((name, DIM), reason_line("not in this kernel" if p is None else p)))
                continue
            full = f" ({p.full_avg10:.1f}%)" if p.full_avg10 is not None and resource != "cpu" else ""
            figure = f"{p.some_avg10:5.1f}%{full}"
            out.append(line((name, DIM), (f"{figure:<16}", level_style(p.some_avg10, 10, 40)),
                            spark_cell(ctx.trends.get(f"psi.{resource}"), max(0, width - 22))))
    elif pressure is not None:
        out.append(line(("psi  ", "bold"), reason_line(pressure)))
    if len(out) < rows and hasattr(mem, "total_kib"):
        out += _memory_chart(ctx, width, rows - len(out))
    return out[:rows]


def _memory_chart(ctx: Ctx, width: int, rows: int) -> list[Text]:
    """Used % over time, scaled to the window's own range so a slow leak shows as a slope
    instead of a flat line at 0-100 %."""
    values = [v for v in ctx.trends.get("mem.used") if v is not None]
    if not values or rows <= 0:
        return []
    low, high = min(values), max(values)
    floor = max(0.0, low - max(1.0, (high - low)))
    shifted = [v - floor for v in ctx.trends.get("mem.used")]
    top = max(1.0, high - floor)
    out = []
    for i, row in enumerate(area(shifted, max(0, width - 10), rows, top)):
        label = "used %" if i == 0 else f" {floor:.0f}-{floor + top:.0f}" if i == 1 else ""
        out.append(line((f"{label:<10}", DIM), (row, "green")))
    return out


def _memory_short(ctx: Ctx, view: LiveView, width: int, rows: int) -> list[Text]:
    mem = view.memory
    first = line(("mem ", "bold"))
    if hasattr(mem, "total_kib"):
        used_pct = 100 * mem.used_kib / mem.total_kib if mem.total_kib else 0.0
        first.append(f"{used_pct:.0f}%", style=level_style(used_pct, 85, 95))
        first.append(f" {kib(mem.used_kib)}/{kib(mem.total_kib)}")
        first.append("  swap ", style=DIM)
        if mem.swap_total_kib:
            spct = 100 * mem.swap_used_kib / mem.swap_total_kib
            first.append(f"{spct:.0f}%", style=level_style(spct, 50, 80))
        else:
            first.append("none", style=DIM)
        first.append("  dirty ", style=DIM).append(kib(mem.dirty_kib))
    elif mem is not None:
        first.append_text(reason_line(mem))
    second = line()
    load = view.load
    if hasattr(load, "load1"):
        second.append("load ", style="bold").append(
            f"{load.load1:.2f} {load.load5:.2f} {load.load15:.2f}  ")
    second.append_text(psi_line(view.pressure))
    if rows <= 1:
        return [first.append("  ").append_text(second)]
    return [first, second]


def psi_line(pressure: Any) -> Text:
    """PSI in one line: some avg10 of cpu, memory and io (full where it says more)."""
    text = line(("psi ", "bold"))
    if not isinstance(pressure, dict):
        return text.append_text(reason_line(pressure if pressure is not None else "not sampled"))
    for resource in ("cpu", "memory", "io"):
        p = pressure.get(resource)
        text.append(f"{resource[:3]} ", style=DIM)
        if p is None or not hasattr(p, "some_avg10"):
            text.append("- ", style=DIM)
            continue
        text.append(f"{p.some_avg10:.1f}%", style=level_style(p.some_avg10, 10, 40))
        if resource != "cpu" and p.full_avg10:
            text.append(f"({p.full_avg10:.1f})", style=DIM)
        text.append(" ")
    return text


# ----------------------------------------------------------------------------- filesystems
def filesystems_panel(ctx: Ctx, width: int, rows: int) -> list[Text]:
    """One row per filesystem, fullest first; one line of them all when rows are short."""
    view = ctx.view
    if view is None:
        return [reason_line(ctx.reason or "no filesystem figures yet")]
    fss = view.filesystems
    if fss is None:
        return [line(("reading...", DIM))]
    if isinstance(fss, Unknown):
        return [reason_line(fss)]
    if not fss:
        return [line(("no disk-backed or network filesystem mounted", DIM))]
    ordered = sorted(_unique(fss), key=lambda f: -(f.used_pct if f.used_pct is not None else 101.0))
    if rows <= 1 and len(ordered) > 1:
        return [_filesystems_line(ordered, width)]
    mount_w = min(max(len(f.mountpoint) for f in ordered), max(8, width // 3))
    gauge_w = max(4, min(16, width - mount_w - 26))
    out = []
    shown = ordered if len(ordered) <= rows else ordered[:max(0, rows - 1)]
    for fs in shown:
        mount = cut_left(fs.mountpoint, mount_w)
        pct = fs.used_pct
        if pct is None:
            out.append(line((f"{mount:<{mount_w}} ", "bold"),
                            reason_line(fs.size_bytes if isinstance(fs.size_bytes, Unknown)
                                        else "unknown")))
            continue
        full, empty = bar(pct / 100, gauge_w)
        style = level_style(pct, 85, 95)
        out.append(line((f"{mount:<{mount_w}} ", "bold"), (full, style or "green"), (empty, DIM),
                        (f" {pct:3.0f}%", style),
                        f" {units.size(fs.used_bytes)}/{units.size(fs.size_bytes)}",
                        (f" {fs.fstype}", DIM)))
    if len(shown) < len(ordered):
        out.append(line((f"+{len(ordered) - len(shown)} more filesystems", DIM)))
    return out


def filesystems_wanted(ctx: Ctx) -> int:
    fss = ctx.view.filesystems if ctx.view is not None else None
    return len(_unique(fss)) if isinstance(fss, list) and fss else 1


def _unique(fss: list) -> list:
    """One row per mountpoint (a mount stacked over another shows once, the top one)."""
    seen: dict[str, Any] = {}
    for fs in fss:
        seen[fs.mountpoint] = fs
    return list(seen.values())


def _filesystems_line(ordered: list, width: int) -> Text:
    text = line()
    for i, fs in enumerate(ordered):
        pct = fs.used_pct
        item = f"{cut_left(fs.mountpoint, 20)} "
        figure = f"{pct:.0f}%" if pct is not None else "?"
        rest = len(ordered) - i
        if i and text.cell_len + len(item) + len(figure) + 2 > width - len(f" +{rest} more"):
            text.append(f"+{rest} more", style=DIM)
            break
        text.append(item, style="bold")
        text.append(figure, style=level_style(pct, 85, 95) if pct is not None else "yellow")
        text.append("  ")
    return text


# ----------------------------------------------------------------------------- disks
def disk_rows(view: LiveView) -> list[tuple[int, DiskRate]]:
    """(depth, disk) in display order: stack tops (md, dm, whole disks not under a stack)
    with their members folded under them; partitions only as members; idle loop, zram and
    optical devices left out. Busy disks first (by %util), then the root disk, then the rest
    in /proc/diskstats order."""
    by_name = {d.name: d for d in view.disks}
    member_names = {m for d in view.disks for m in d.members}
    parts_of: dict[str, list[str]] = {}
    for d in view.disks:
        if d.kind == "part" and d.parent:
            parts_of.setdefault(d.parent, []).append(d.name)

    def under_stack(d: DiskRate) -> bool:
        if d.name in member_names:
            return True
        parts = parts_of.get(d.name, [])
        return bool(parts) and all(p in member_names for p in parts)

    def shown(d: DiskRate) -> bool:
        return not (d.kind in HIDDEN_IDLE_KINDS and d.idle)
    tops = [d for d in view.disks if d.kind != "part" and not under_stack(d) and shown(d)]
    root_top = stack_top(view.root_device, view)
    busy = sorted((d for d in tops if (d.util or 0) >= BUSY_UTIL), key=lambda d: -(d.util or 0))
    rest = [d for d in tops if d not in busy]
    rest.sort(key=lambda d: d.name != root_top)   # stable: the root disk first, then as listed
    out: list[tuple[int, DiskRate]] = []

    def add(d: DiskRate, depth: int, seen: frozenset) -> None:
        out.append((depth, d))
        if depth >= 3:
            return
        for m in d.members:
            member = by_name.get(m)
            if member is not None and m not in seen:
                add(member, depth + 1, seen | {m})
    for d in busy + rest:
        add(d, 0, frozenset({d.name}))
    return out


def stack_top(name: str | None, view: LiveView) -> str | None:
    """The top-level row that holds device `name`: a partition's disk, an array's array."""
    if name is None:
        return None
    by_name = {d.name: d for d in view.disks}
    for _ in range(8):
        d = by_name.get(name)
        if d is None:
            return name
        holder = next((h.name for h in view.disks if name in h.members), None)
        if holder is not None:
            name = holder
        elif d.kind == "part" and d.parent:
            name = d.parent
        else:
            return name
    return name


def disk_label(d: DiskRate) -> str:
    return f"{d.alias} ({d.name})" if d.alias else d.name


def disks_wanted(ctx: Ctx) -> tuple[int, int]:
    """(rows with the stack tops only, rows with their members), the header included."""
    view = ctx.view
    if view is None or view.disks_error:
        return 1, 1
    rows = disk_rows(view)
    return 1 + max(1, sum(1 for depth, _ in rows if depth == 0)), 1 + max(1, len(rows))


def disks_panel(ctx: Ctx, width: int, rows: int) -> list[Text]:
    """A header, then one row per disk; members folded under their array while rows last."""
    view = ctx.view
    if view is None:
        return _disks_from_report(ctx, rows)
    if view.disks_error:
        return [reason_line(view.disks_error)]
    all_rows = disk_rows(view)
    if not all_rows:
        return [line(("no disks", DIM))]
    room = max(1, rows - 1)
    picked = all_rows if len(all_rows) <= room else [r for r in all_rows if r[0] == 0]
    shown = picked if len(picked) <= room else picked[:max(0, room - 1)]
    labels = {id(d): ("  " * depth + ("└ " if depth else "") + disk_label(d))
              for depth, d in all_rows}
    # at least as wide as "─ Disks": the one-column layout puts the title over the names
    name_w = max(7, min(max(len(labels[id(d)]) for _, d in shown or all_rows), max(10, width // 4)))
    head = line((f"{'disk':<{name_w}} {'r/s':>6} {'w/s':>6} {'await':>7} {'%util':>6}  ", "bold"))
    spark_w = max(0, width - head.cell_len - 13)    # 13: room for " busy member"
    if spark_w >= 16:
        head.append("%util over time", style=DIM)
    out = [head]
    busy_members = {m for _, x in all_rows for m in x.busy_members}
    for depth, d in shown:
        util_style = level_style(d.util, UTIL_WARN_PCT, UTIL_CRIT_PCT)
        row = line((f"{cut(labels[id(d)], name_w):<{name_w}} ", "bold" if depth == 0 else ""),
                   f"{units.per_s(d.r_s):>6} {units.per_s(d.w_s):>6} ",
                   (f"{await_text(d):>7} ", level_style(d.await_ms, 20, 100)),
                   (f"{units.pct(d.util):>6}", util_style), "  ",
                   spark_cell(ctx.trends.get(disk_series(d.name, "util")), spark_w, 100.0,
                              util_style or SPARK))
        if d.name in busy_members:
            row.append(" busy member", style="bold yellow")
        out.append(row)
    hidden = len(all_rows) - len(shown)
    if hidden > 0:
        out.append(line((f"+{hidden} more (Storage: 2)", DIM)))
    return out


def _disks_from_report(ctx: Ctx, rows: int) -> list[Text]:
    """No live figures (a capture): the disks discovery found, with sizes, and why no rates."""
    out = [reason_line(ctx.reason or "no live figures yet")]
    section = ctx.report.section("storage") if ctx.report is not None else None
    devices = getattr(section, "devices", None)
    if not isinstance(devices, dict):
        return out
    for name in getattr(section, "roots", []):
        if len(out) >= rows:
            break
        dev = devices.get(name)
        if dev is None or dev.size_bytes == 0:
            continue
        size = units.size(dev.size_bytes) if known(dev.size_bytes) else "?"
        out.append(line((f"{name:<12} ", "bold"), f"{dev.type:<6} {size:>6}"))
    return out


# ----------------------------------------------------------------------------- NICs
def nics_wanted(ctx: Ctx) -> int:
    view = ctx.view
    if view is None or view.nics_error:
        return 1
    up = [n for n in view.nics if n.up and n.name != "lo"]
    return 1 + max(1, len(up)) + (1 if any(not n.up for n in view.nics) else 0)


def nics_panel(ctx: Ctx, width: int, rows: int) -> list[Text]:
    view = ctx.view
    if view is None:
        return _nics_from_report(ctx, rows)
    if view.nics_error:
        return [reason_line(view.nics_error)]
    up = [n for n in view.nics if n.up and n.name != "lo"]
    down = [n.name for n in view.nics if not n.up]
    name_w = max(9, min(max((len(n.name) for n in up), default=3), 16))   # "─ Network"
    spark_w = max(0, (width - name_w - 45) // 2)    # 36 of figures, 1 between, 8 " STALLED"
    head = line((f"{'nic':<{name_w}} {'rx':>10} {'tx':>10} {'err+drop/s':>11}  ", "bold"))
    if spark_w >= 6:
        head.append(f"{'rx':<{spark_w}} tx", style=DIM)
    out = [head]
    room = max(1, rows - 1 - (1 if down else 0))
    shown = up if len(up) <= room else up[:max(0, room - 1)]
    for nic in shown:
        bad = (nic.errors_s or 0) + (nic.drops_s or 0)
        row = line((f"{cut(nic.name, name_w):<{name_w}} ", "bold"),
                   f"{units.bytes_s(nic.rx_bps):>10} ", f"{units.bytes_s(nic.tx_bps):>10} ",
                   (f"{units.per_s(bad):>11}", "bold yellow" if bad else ""), "  ")
        if spark_w >= 6:
            row.append(sparkline(ctx.trends.get(nic_series(nic.name, "rx")), spark_w), style="green")
            row.append(" ")
            row.append(sparkline(ctx.trends.get(nic_series(nic.name, "tx")), spark_w), style=SPARK)
        if nic.stalled:
            row.append(" STALLED", style="bold white on red")
        out.append(row)
    if len(shown) < len(up):
        out.append(line((f"+{len(up) - len(shown)} more (Network: 4)", DIM)))
    if not up:
        out.append(line(("no NIC is up (lo aside)", "yellow")))
    if down:
        out.append(line(("down: ", DIM), (" ".join(down), DIM)))
    return out


def _nics_from_report(ctx: Ctx, rows: int) -> list[Text]:
    out = [reason_line(ctx.reason or "no live figures yet")]
    section = ctx.report.section("net") if ctx.report is not None else None
    nics = getattr(section, "nics", None)
    if not isinstance(nics, list):
        return out
    for nic in nics:
        if len(out) >= rows:
            break
        state = nic.operstate if isinstance(nic.operstate, str) else "?"
        out.append(line((f"{nic.name:<12} ", "bold"), f"{nic.kind:<14} ", (state, DIM)))
    return out
