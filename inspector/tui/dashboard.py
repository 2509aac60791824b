"""The Overview's live panels, painted as lines for a given size (pure: no Textual here).

Panels: CPU (user, system, iowait, steal over the last minutes), memory with load and
pressure, filesystem fill, disks (iostat -x per disk, md/dm with their members folded under
them), NICs (rx/tx with the stall marker), top IO processes and D-state tasks.

Layout: at 120 columns and 30 rows or more, framed panels in three bands (CPU | memory |
filesystems; disks | NICs; processes), the first band taking the rows the others leave, so
the charts grow with the terminal. Below that, the essentials (CPU, disks, NICs) stacked
under one-line titles, then the other panels while rows remain.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from inspector.model import Unknown, known
from inspector.tui.live import DiskRate, LiveView
from inspector.tui.trends import Trends
from inspector.widgets import units
from inspector.widgets.spark import area, bar, sparkline

WIDE_MIN = (120, 30)
DIM = "grey62"
FRAME = "grey50"
SPARK = "cyan"
HIDDEN_IDLE_KINDS = ("loop", "zram", "rom")
BUSY_UTIL = 5.0         # %util from which a disk counts as busy (sorted first)


@dataclass
class Ctx:
    """What every panel may read."""
    view: LiveView | None
    trends: Trends
    reason: str | None            # why there is no live view ("capture: no live data" ...)
    report: Any = None            # the discovery report (disk sizes, NICs on a capture)


Panel = Callable[[Ctx, int, int], "list[Text]"]


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
    out = text.copy()
    out.truncate(max(0, width), overflow="ellipsis", pad=True)
    return out


def reason_line(reason: Any) -> Text:
    reason = str(reason.reason if isinstance(reason, Unknown) else reason)
    return line((reason, "yellow"))


def level_style(value: float | None, warn: float, crit: float) -> str:
    if value is None:
        return ""
    return "bold red" if value >= crit else "yellow" if value >= warn else ""


def spark_cell(values, width: int, top: float | None = None, style: str = SPARK) -> tuple[str, str]:
    return (sparkline(values, width, top), style) if width > 0 else ("", "")


# ----------------------------------------------------------------------------- CPU
CPU_SERIES = (("user", "usr", 10.0), ("system", "sys", 10.0), ("iowait", "iow", 10.0),
              ("steal", "st", 10.0))


def cpu_panel(ctx: Ctx, width: int, height: int) -> list[Text]:
    view = ctx.view
    if view is None or view.cpu is None:
        return [reason_line(ctx.reason or "no CPU figures yet")]
    cpu = view.cpu
    if isinstance(cpu, Unknown):
        return [reason_line(cpu)]
    figures = line(("usr ", DIM), f"{cpu.user:4.1f}%  ", ("sys ", DIM), f"{cpu.system:4.1f}%  ",
                   ("iow ", DIM), (f"{cpu.iowait:4.1f}%", level_style(cpu.iowait, 10, 30)), "  ",
                   ("st ", DIM), (f"{cpu.steal:4.1f}%", level_style(cpu.steal, 2, 10)), "  ")
    extra = line(("idle ", DIM), f"{cpu.idle:3.0f}%")
    if cpu.cpus:
        extra.append(f"  {cpu.cpus} CPUs", style=DIM)
    load = view.load
    if hasattr(load, "load1"):
        extra.append("  load ", style=DIM).append(f"{load.load1:.2f}")
    label_w = 10
    chart_w = max(0, width - label_w)
    per = (height - 1) // len(CPU_SERIES)
    if height <= 1:
        return [figures.append_text(extra)]
    if per < 1:   # two rows: the figures, then the busy share over time
        busy = _busy_series(ctx.trends)
        return [figures.append_text(extra),
                line(("busy      ", DIM), spark_cell(busy, chart_w, 100.0))]
    rows = [extra]   # each state has its own rows below, its figure on its first one
    for key, short, floor in CPU_SERIES:
        values = ctx.trends.get(f"cpu.{key}")
        peak = max((v for v in values if v is not None), default=0.0)
        top = 100.0 if peak > 50 else 50.0 if peak > 20 else 20.0 if peak > floor else floor
        now = getattr(cpu, key)
        style = level_style(now, 10, 30) if key == "iowait" else \
            level_style(now, 2, 10) if key == "steal" else ""
        for i, row in enumerate(area(values, chart_w, per, top)):
            if i == 0:
                label = line((f"{short:<4}", "bold"), (f"{now:4.1f}%", style))
            elif i == 1:
                label = line((f"  0-{top:.0f}%", DIM))
            else:
                label = line("")
            rows.append(fit(label, label_w).append(row, style=CPU_STYLES[key]))
    return rows


CPU_STYLES = {"user": "green", "system": "red", "iowait": "yellow", "steal": "magenta"}


def _busy_series(trends: Trends) -> list[float | None]:
    series = [list(trends.get(f"cpu.{k}")) for k, _, _ in CPU_SERIES]
    n = min((len(s) for s in series), default=0)
    return [sum((s[len(s) - n + i] or 0.0) for s in series) for i in range(n)]


# ----------------------------------------------------------------------------- memory
def kib(n: int) -> str:
    return units.size(n * 1024)


def memory_panel(ctx: Ctx, width: int, height: int) -> list[Text]:
    view = ctx.view
    if view is None:
        return [reason_line(ctx.reason or "no memory figures yet")]
    rows: list[Text] = []
    mem = view.memory
    gauge_w = max(4, min(20, width - 44))
    if hasattr(mem, "total_kib"):
        frac = mem.used_kib / mem.total_kib if mem.total_kib else None
        full, empty = bar(frac, gauge_w)
        used_pct = 100 * (frac or 0)
        rows.append(line(("mem  ", "bold"), (full, level_style(used_pct, 85, 95) or "green"),
                         (empty, DIM), f" {used_pct:3.0f}% ",
                         f"{kib(mem.used_kib)}/{kib(mem.total_kib)}",
                         ("  avail ", DIM), kib(mem.available_kib),
                         ("  cache ", DIM), kib(mem.cached_kib + mem.buffers_kib)))
        if mem.swap_total_kib:
            sfrac = mem.swap_used_kib / mem.swap_total_kib
            full, empty = bar(sfrac, gauge_w)
            rows.append(line(("swap ", "bold"), (full, level_style(100 * sfrac, 50, 80) or "green"),
                             (empty, DIM), f" {100 * sfrac:3.0f}% ",
                             f"{kib(mem.swap_used_kib)}/{kib(mem.swap_total_kib)}"))
        else:
            rows.append(line(("swap ", "bold"), ("none configured", DIM)))
        rows.append(line(("dirty ", DIM), kib(mem.dirty_kib), ("  writeback ", DIM),
                         kib(mem.writeback_kib)))
    elif mem is not None:
        rows.append(line(("mem  ", "bold"), reason_line(mem)))
    load = view.load
    spark_w = max(0, width - 36)
    if hasattr(load, "load1"):
        rows.append(line(("load ", "bold"), f"{load.load1:.2f} {load.load5:.2f} {load.load15:.2f}",
                         (f"  {load.runnable}/{load.threads} run  ", DIM),
                         spark_cell(ctx.trends.get("load1"), spark_w)))
    elif load is not None:
        rows.append(line(("load ", "bold"), reason_line(load)))
    pressure = view.pressure
    if isinstance(pressure, dict):
        rows.append(line(("psi  ", "bold"), ("some avg10 (full)", DIM)))
        for resource in ("cpu", "memory", "io"):
            p = pressure.get(resource)
            name = f"  {resource[:3]:<4}"
            if p is None or not hasattr(p, "some_avg10"):
                rows.append(line((name, DIM), reason_line("not in this kernel" if p is None else p)))
                continue
            full = f" ({p.full_avg10:.1f}%)" if p.full_avg10 is not None and resource != "cpu" else ""
            figure = f"{p.some_avg10:5.1f}%{full}"
            rows.append(line((name, DIM), (f"{figure:<16}", level_style(p.some_avg10, 10, 40)),
                             spark_cell(ctx.trends.get(f"psi.{resource}"), max(0, width - 22),
                                        None)))
    elif pressure is not None:
        rows.append(line(("psi  ", "bold"), reason_line(pressure)))
    if len(rows) < height and hasattr(mem, "total_kib"):
        rest = height - len(rows)
        chart = area(ctx.trends.get("mem.used"), max(0, width - 10), min(rest, 6), 100.0)
        for i, row in enumerate(chart):
            label = "used %" if i == 0 else ""
            rows.append(line((f"{label:<10}", DIM), (row, "green")))
    return rows[:height]


# ----------------------------------------------------------------------------- filesystems
def filesystems_panel(ctx: Ctx, width: int, height: int) -> list[Text]:
    view = ctx.view
    fss = view.filesystems if view is not None else None
    if view is None:
        return [reason_line(ctx.reason or "no filesystem figures yet")]
    if fss is None:
        return [line(("reading...", DIM))]
    if isinstance(fss, Unknown):
        return [reason_line(fss)]
    if not fss:
        return [line(("no disk-backed or network filesystem mounted", DIM))]
    ordered = sorted(fss, key=lambda f: -(f.used_pct if f.used_pct is not None else 101.0))
    mount_w = min(max(len(f.mountpoint) for f in ordered), max(8, width // 3))
    gauge_w = max(4, min(16, width - mount_w - 26))
    rows = []
    shown = ordered if len(ordered) <= height else ordered[:max(0, height - 1)]
    for fs in shown:
        mount = fs.mountpoint if len(fs.mountpoint) <= mount_w else "…" + fs.mountpoint[-(mount_w - 1):]
        pct = fs.used_pct
        if pct is None:
            rows.append(line((f"{mount:<{mount_w}} ", "bold"),
                             reason_line(fs.size_bytes if isinstance(fs.size_bytes, Unknown)
                                         else "unknown")))
            continue
        full, empty = bar(pct / 100, gauge_w)
        style = level_style(pct, 85, 95)
        rows.append(line((f"{mount:<{mount_w}} ", "bold"), (full, style or "green"), (empty, DIM),
                         (f" {pct:3.0f}%", style),
                         f" {units.size(fs.used_bytes)}/{units.size(fs.size_bytes)}",
                         (f" {fs.fstype}", DIM)))
    if len(shown) < len(ordered):
        rows.append(line((f"+{len(ordered) - len(shown)} more filesystems", DIM)))
    return rows


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


def disks_panel(ctx: Ctx, width: int, height: int, compact: bool = False) -> list[Text]:
    view = ctx.view
    if view is None:
        return _disks_from_report(ctx, width, height)
    if view.disks_error:
        return [reason_line(view.disks_error)]
    rows = disk_rows(view)
    if not rows:
        return [line(("no disks", DIM))]
    labels = [("  " * depth + ("└ " if depth else "") + disk_label(d)) for depth, d in rows]
    name_w = min(max(len(s) for s in labels), max(10, width // 4))
    head = line((f"{'disk':<{name_w}} {'r/s':>6} {'w/s':>6} {'await':>7} {'%util':>6}  ", "bold"))
    spark_w = max(0, width - head.cell_len - 13)    # 13: room for " busy member"
    if spark_w:
        head.append("%util over time" if spark_w >= 16 else "", style=DIM)
    out = [head]
    room = height - 1
    shown = rows if len(rows) <= room else rows[:max(0, room - 1)]
    if compact:   # members are details: tops only when rows are short
        tops = [r for r in rows if r[0] == 0]
        shown = tops if len(tops) <= room else tops[:max(0, room - 1)]
    label_of = {id(d): label for (_, d), label in zip(rows, labels)}
    busy_members = {m for _, x in rows for m in x.busy_members}
    for depth, d in shown:
        label = label_of[id(d)]
        if len(label) > name_w:
            label = label[:name_w - 1] + "…"
        flagged = d.name in busy_members
        util_style = level_style(d.util, 60, 90)
        row = line((f"{label:<{name_w}} ", "bold" if depth == 0 else ""),
                   f"{units.per_s(d.r_s):>6} {units.per_s(d.w_s):>6} ",
                   (f"{units.latency_ms(d.await_ms):>7} ", level_style(d.await_ms, 20, 100)),
                   (f"{units.pct(d.util):>6}", util_style), "  ",
                   spark_cell(ctx.trends.get(f"disk.{d.name}.util"), spark_w, 100.0,
                              util_style or SPARK))
        if flagged:
            row.append(" busy member", style="bold yellow")
        out.append(row)
    hidden = len(rows) - len(shown) if not compact else \
        len([r for r in rows if r[0] == 0]) - len(shown)
    if hidden > 0:
        out.append(line((f"+{hidden} more (Storage: 2)", DIM)))
    return out


def _disks_from_report(ctx: Ctx, width: int, height: int) -> list[Text]:
    """No live figures (a capture): the disks discovery found, with sizes, and why no rates."""
    out = [reason_line(ctx.reason or "no live figures yet")]
    section = ctx.report.section("storage") if ctx.report is not None else None
    devices = getattr(section, "devices", None)
    if not isinstance(devices, dict):
        return out
    for name in getattr(section, "roots", []):
        dev = devices.get(name)
        if dev is None or dev.size_bytes == 0:
            continue
        size = units.size(dev.size_bytes) if known(dev.size_bytes) else "?"
        out.append(line((f"{name:<12} ", "bold"), f"{dev.type:<6} {size:>6}"))
        if len(out) >= height:
            break
    return out


# ----------------------------------------------------------------------------- NICs
def nics_panel(ctx: Ctx, width: int, height: int) -> list[Text]:
    view = ctx.view
    if view is None:
        return _nics_from_report(ctx, height)
    if view.nics_error:
        return [reason_line(view.nics_error)]
    up = [n for n in view.nics if n.up and n.name != "lo"]
    down = [n.name for n in view.nics if not n.up]
    name_w = min(max((len(n.name) for n in up), default=3), 16)
    spark_w = max(0, (width - name_w - 45) // 2)    # 36 of figures, 1 between, 8 " STALLED"
    head = line((f"{'nic':<{name_w}} {'rx':>10} {'tx':>10} {'err+drop/s':>11}  ", "bold"))
    if spark_w >= 6:
        head.append(f"{'rx':<{spark_w}} tx", style=DIM)
    out = [head]
    room = height - 1 - (1 if down else 0)
    for nic in up[:max(0, room)]:
        bad = (nic.errors_s or 0) + (nic.drops_s or 0)
        row = line((f"{nic.name:<{name_w}} ", "bold"), f"{units.bytes_s(nic.rx_bps):>10} ",
                   f"{units.bytes_s(nic.tx_bps):>10} ",
                   (f"{units.per_s(bad):>11}", "bold yellow" if bad else ""), "  ")
        if spark_w >= 6:
            row.append(sparkline(ctx.trends.get(f"nic.{nic.name}.rx"), spark_w), style="green")
            row.append(" ")
            row.append(sparkline(ctx.trends.get(f"nic.{nic.name}.tx"), spark_w), style=SPARK)
        if nic.stalled:
            row.append(" STALLED", style="bold white on red")
        out.append(row)
    if not up:
        out.append(line(("no NIC is up (lo aside)", "yellow")))
    if down:
        out.append(line(("down: ", DIM), (" ".join(down), DIM)))
    return out


def _nics_from_report(ctx: Ctx, height: int) -> list[Text]:
    out = [reason_line(ctx.reason or "no live figures yet")]
    section = ctx.report.section("net") if ctx.report is not None else None
    nics = getattr(section, "nics", None)
    if not isinstance(nics, list):
        return out
    for nic in nics:
        if len(out) >= height:
            break
        state = nic.operstate if isinstance(nic.operstate, str) else "?"
        out.append(line((f"{nic.name:<12} ", "bold"), f"{nic.kind:<14} ", (state, DIM)))
    return out


# ----------------------------------------------------------------------------- processes
def processes_panel(ctx: Ctx, width: int, height: int) -> list[Text]:
    view = ctx.view
    if view is None:
        return [reason_line(ctx.reason or "no process figures yet")]
    left = _top_io(view.top_io, height)
    right = _dstate(view.dstate, height)
    if width >= 100:
        half = width // 2
        return [fit(a, half - 1).append(" ").append_text(b) for a, b in
                zip(_pad(left, height), _pad(right, height))][:max(len(left), len(right))]
    return (left + right)[:height]


def _pad(lines: list[Text], n: int) -> list[Text]:
    return lines + [Text("")] * max(0, n - len(lines))


def _top_io(top: Any, height: int) -> list[Text]:
    out = [line(("top IO", "bold"), ("   pid command            read/s    write/s", DIM))]
    if isinstance(top, Unknown) or top is None:
        out.append(reason_line("not sampled" if top is None else top))
        return out
    busy = [p for p in top if p.read_bytes_s or p.write_bytes_s]
    if not busy:
        out.append(line(("no process is reading or writing", DIM)))
    for p in busy[:max(1, height - 1)]:
        out.append(line(f"{p.pid:>9} ", (f"{p.comm[:16]:<16}", "bold"),
                        f" {units.bytes_s(p.read_bytes_s):>10} {units.bytes_s(p.write_bytes_s):>10}"))
    return out


def _dstate(dstate: Any, height: int) -> list[Text]:
    out = [line(("D state", "bold"), ("  pid command          in D  waiting in", DIM))]
    if isinstance(dstate, Unknown) or dstate is None:
        out.append(reason_line("not sampled" if dstate is None else dstate))
        return out
    if not dstate:
        out.append(line(("no task in uninterruptible sleep", DIM)))
    for p in sorted(dstate, key=lambda p: -p.seconds)[:max(1, height - 1)]:
        wchan = p.wchan if isinstance(p.wchan, str) else "?"
        out.append(line(f"{p.pid:>8} ", (f"{p.comm[:16]:<16}", "bold"),
                        (f" {p.seconds:4.0f} s", level_style(p.seconds, 5, 30)), f"  {wchan}"))
    return out


# ----------------------------------------------------------------------------- layout
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
        out.append(Text("│", style=FRAME).append_text(fit(ln, inner)).append("│", style=FRAME))
    out.append(Text("╰" + "─" * inner + "╯", style=FRAME))
    return out[:height]


def titled(title: str, lines: list[Text], width: int, height: int, note: str = "") -> list[Text]:
    """The compact frame: a title rule, then the lines."""
    head = Text("─ ", style=FRAME).append(title, style="bold")
    if note:
        head.append(f" {note}", style=DIM)
    head.append(" " + "─" * max(0, width - head.cell_len - 1), style=FRAME)
    head.truncate(width, overflow="crop", pad=True)
    return [head] + [fit(ln, width) for ln in lines[:max(0, height - 1)]]


def hjoin(columns: list[list[Text]], widths: list[int], height: int) -> list[Text]:
    out = []
    for y in range(height):
        row = Text(no_wrap=True)
        for col, w in zip(columns, widths):
            row.append_text(fit(col[y] if y < len(col) else Text(""), w))
        out.append(row)
    return out


def split(width: int, shares: list[int]) -> list[int]:
    total = sum(shares)
    widths = [width * s // total for s in shares]
    widths[-1] = width - sum(widths[:-1])
    return widths


def paint(ctx: Ctx, width: int, height: int) -> list[Text]:
    if width >= WIDE_MIN[0] and height >= WIDE_MIN[1]:
        return _paint_wide(ctx, width, height)
    return _paint_compact(ctx, width, height)


def _note(ctx: Ctx) -> str:
    view = ctx.view
    return f"every {view.interval:.0f} s" if view is not None and view.interval else ""


def _paint_wide(ctx: Ctx, width: int, height: int) -> list[Text]:
    half = split(width, [1, 1])
    disks = disks_panel(ctx, half[0] - 2, 24)
    nics = nics_panel(ctx, half[1] - 2, 24)
    middle_h = min(max(len(disks), len(nics)) + 2, max(5, height // 3))
    procs = processes_panel(ctx, width - 2, 10)
    bottom_h = min(len(procs) + 2, 8, max(3, height // 5))
    top_h = max(6, height - middle_h - bottom_h)
    cols = split(width, [1, 1])
    fss = filesystems_panel(ctx, cols[1] - 2, max(1, top_h // 3))
    fs_h = min(len(fss) + 2, max(3, top_h // 3))
    mem_h = top_h - fs_h
    right = (boxed("Memory · load · pressure", memory_panel(ctx, cols[1] - 2, mem_h - 2),
                   cols[1], mem_h)
             + boxed("Filesystems", filesystems_panel(ctx, cols[1] - 2, fs_h - 2), cols[1], fs_h))
    top = hjoin([boxed("CPU", cpu_panel(ctx, cols[0] - 2, top_h - 2), cols[0], top_h, _note(ctx)),
                 right], cols, top_h)
    middle = hjoin([boxed("Disks", disks_panel(ctx, half[0] - 2, middle_h - 2), half[0],
                          middle_h, "2 Storage"),
                    boxed("Network", nics_panel(ctx, half[1] - 2, middle_h - 2), half[1],
                          middle_h, "4 Network")], half, middle_h)
    bottom = boxed("Processes", processes_panel(ctx, width - 2, bottom_h - 2), width, bottom_h,
                   "top IO and D state")
    return (top + middle + bottom)[:height]


def _paint_compact(ctx: Ctx, width: int, height: int) -> list[Text]:
    """Essentials first (CPU, disks, NICs), each as small as it can be; then memory,
    filesystems and processes while rows remain; spare rows go to the CPU chart."""
    disks = disks_panel(ctx, width, max(2, height // 3), compact=True)
    nics = nics_panel(ctx, width, max(2, height // 4))
    need = 2 + len(disks) + 1 + len(nics) + 1
    cpu_h = max(1, min(height - need + 1, 9))
    out = titled("CPU", cpu_panel(ctx, width, cpu_h), width, cpu_h + 1, _note(ctx))
    out += titled("Disks", disks, width, len(disks) + 1, "2 Storage")
    out += titled("Network", nics, width, len(nics) + 1, "4 Network")
    for title, panel in (("Memory · load · pressure", memory_panel),
                         ("Filesystems", filesystems_panel), ("Processes", processes_panel)):
        room = height - len(out)
        if room < 3:
            break
        lines = panel(ctx, width, room - 1)
        out += titled(title, lines, width, min(room, len(lines) + 1))
    return out[:height]
