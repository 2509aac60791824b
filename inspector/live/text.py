"""Plain-text blocks for `inspector top`: fixed columns like iostat -x and vmstat, no colour,
so they read well over a slow SSH link and parse with awk."""
from __future__ import annotations

import dataclasses
import textwrap
import time

from inspector.live.diskstats import DiskRates
from inspector.live.findings import LiveFinding
from inspector.live.processes import SortKey, sort_processes
from inspector.live.sampler import Counters, Rates
from inspector.model import Unknown, known
from inspector.text.escapes import printable, visible

DISK_COLS = ("r/s", "w/s", "d/s", "f/s", "rkB/s", "wkB/s", "dkB/s", "rrqm/s", "wrqm/s",
             "r_await", "w_await", "d_await", "f_await", "aqu-sz", "rareq-sz", "wareq-sz",
             "%util")
_DISK_ATTRS = ("r_s", "w_s", "d_s", "f_s", "rkB_s", "wkB_s", "dkB_s", "rrqm_s", "wrqm_s",
               "r_await", "w_await", "d_await", "f_await", "aqu_sz", "rareq_sz", "wareq_sz",
               "util")
# What fits 80 columns: the figures that answer "which device is saturated, by what".
NARROW_DISK_COLS = ("r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "%util")
_NARROW_DISK_ATTRS = ("r_s", "w_s", "rkB_s", "wkB_s", "r_await", "w_await", "aqu_sz", "util")
CPU_COLS = ("%usr", "%nice", "%sys", "%iowait", "%irq", "%soft", "%steal", "%idle")
_CPU_ATTRS = ("user", "nice", "system", "iowait", "irq", "softirq", "steal", "idle")


def _num(value: float | Unknown | None, width: int = 8, fit: bool = False) -> str:
    # always a leading space: a figure never merges with its neighbour. Fitted to a terminal,
    # a big one gives up decimals before it widens its row (246086.27 kB/s in 9 columns:
    # 246086.3); unfitted (--wide, a pipe) it keeps them and widens the row.
    if not known(value):
        return " -".rjust(width)
    for digits in ((2, 1, 0) if fit else (2,)):
        text = f" {value:.{digits}f}"
        if len(text) <= width:
            break
    return text.rjust(width)


def _wrap(line: str, width: int | None) -> list[str]:
    """A prose line (a finding, a note) folded to the terminal, continuation indented."""
    if not width or len(line) <= width:
        return [line]
    return textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False) or [line]


def _int(value: float | Unknown | None) -> str:
    return f"{value:.0f}" if known(value) else "-"


def _unknown_line(label: str, value: Unknown) -> str:
    return f"{label}: unknown ({value.reason})"


def format_block(r: Rates, show_idle: bool = False, width: int | None = None) -> str:
    """One interval: header, CPU, devices, NICs, D state, top IO, findings. With a terminal
    `width`, tables too wide for it drop to their essential columns (--wide keeps all)."""
    # a NIC or process name from a capture must not retitle the terminal (the whole process
    # list is not printed: not copied either)
    r = printable(dataclasses.replace(r, processes=None))
    lines: list[str] = []
    stamp = _stamp(r)
    head = f"{stamp}  " + (f"averages since boot ({r.interval:.0f} s)" if r.since_boot
                            else f"interval {r.interval:.2f} s")
    if known(r.load):
        head += f"  load {r.load.load1:.2f} {r.load.load5:.2f} {r.load.load15:.2f}"
    tail = ""
    if known(r.cpu):
        tail = f"cs/s {_int(r.cpu.ctxt_s)}  intr/s {_int(r.cpu.intr_s)}"
        if known(r.cpu.procs_blocked):
            tail += f"  blocked {r.cpu.procs_blocked}"
    if tail and width and len(head) + 2 + len(tail) > width:
        lines += [head, tail]
    elif tail:
        lines.append(f"{head}  {tail}")
    else:
        lines.append(head)
    lines += _cpu_lines(r)
    lines += _disk_lines(r, show_idle, width)
    lines += _nic_lines(r, width)
    lines += _dstate_lines(r, width)
    lines += _io_lines(r)
    lines += _cpu_top_lines(r)
    for f in r.findings:
        lines += _wrap(f"{f.level.label.upper()} {f.subject}: {f.message}", width)
    lines += live_finding_lines(r.live_findings, width)
    lines += _timeout_lines(r.timed_out, width)
    return "\n".join(lines) + "\n"


def _cpu_top_lines(r: Rates, limit: int = 3) -> list[str]:
    if not isinstance(r.top_processes, list):
        return []
    busy = [p for p in sort_processes(r.top_processes, SortKey.CPU, limit) if p.cpu_pct >= 1]
    if not busy:
        return []
    out = ["Top CPU:     pid    %cpu    RSS MiB  user      command"]
    for p in busy:
        out.append(f"         {p.pid:>7}{p.cpu_pct:8.1f}{p.rss_kib / 1024:11.1f}  "
                   f"{p.user[:8]:<8}  {p.comm}")
    return out


def live_finding_lines(findings: list[LiveFinding], width: int | None = None) -> list[str]:
    """The live rules' findings: active ones with the time they began, then those that
    ended in this interval (`findings` already through printable())."""
    out = []
    for lf in findings:
        f = lf.finding
        began = time.strftime("%H:%M:%S", time.localtime(lf.since))
        if lf.ended is None:
            text = f"LIVE {f.level.label.upper()} {f.subject}: {f.message} (since {began}, {f.code})"
        else:
            ended = time.strftime("%H:%M:%S", time.localtime(lf.ended))
            text = f"LIVE ENDED {ended} {f.subject}: {f.message} (from {began}, {f.code})"
        out += _wrap(text, width)
    return out


def _stamp(r: Rates) -> str:
    """When the interval ended: this machine's clock live; a recorded one on the recording
    host's clock then, with its UTC offset (a database read elsewhere, or after a DST change,
    still says 03:10 for what happened at 03:10 there)."""
    if not r.wall_known:
        return "time not recorded"
    if r.tz_offset_s is None:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.wall))
    from inspector.text.durations import utc_offset
    return (time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r.wall + r.tz_offset_s))
            + f" {utc_offset(r.tz_offset_s)} recorded")


def _timeout_lines(timed_out: dict[str, str], width: int | None) -> list[str]:
    """Sources that did not answer (a hung FUSE or NFS mount, lxcfs): named, so a panel
    missing from the block is not mistaken for an idle host."""
    lines: list[str] = []
    for source, reason in timed_out.items():
        lines += _wrap(f"not answering: {source} ({reason})", width)
    return lines


def _cpu_lines(r: Rates) -> list[str]:
    if not known(r.cpu):
        return [_unknown_line("CPU", r.cpu)]
    out = ["CPU    " + "".join(c.rjust(8) for c in CPU_COLS)]
    for p in [r.cpu.overall, *r.cpu.per_cpu]:
        out.append(f"{p.cpu:<7}" + "".join(_num(getattr(p, a)) for a in _CPU_ATTRS))
    return out


def _disk_used(d: DiskRates) -> bool:
    return any(getattr(d, a) for a in ("r_s", "w_s", "util", "in_flight")) or bool(
        known(d.d_s) and d.d_s) or bool(known(d.f_s) and d.f_s)


def _disk_lines(r: Rates, show_idle: bool, term_width: int | None = None) -> list[str]:
    if not known(r.disks):
        return [_unknown_line("Devices", r.disks)]
    shown = [d for d in r.disks if show_idle or _disk_used(d) or d.members]
    width = max([len(d.name) + (2 if d.parent else 0) for d in shown] + [8])
    cols: tuple[str, ...] = DISK_COLS
    attrs: tuple[str, ...] = _DISK_ATTRS
    colw = 9
    if term_width and width + colw * len(cols) > term_width:
        cols, attrs = NARROW_DISK_COLS, _NARROW_DISK_ATTRS
        if width + colw * len(cols) > term_width:     # long names (nvme10n1p12, dm aliases)
            colw = 8
    out = ["Device".ljust(width) + "".join(c.rjust(colw) for c in cols)]
    for d in shown:
        name = ("  " + d.name) if d.parent else d.name
        out.append(name.ljust(width) + "".join(_num(getattr(d, a), colw, bool(term_width))
                                               for a in attrs))
        if d.members:
            kind = f"{d.kind} {d.alias}" if d.alias else d.kind
            note = f"{'':{width}}  {kind} members: {' '.join(d.members)}"
            if d.busy_members:
                note += (f"  !! much busier than {d.name} ({d.util:.0f}% util): "
                         + ", ".join(_member_util(r.disks, m) for m in d.busy_members))
            out.append(note)
    hidden = len(r.disks) - len(shown)
    if hidden:
        out.append(f"({hidden} idle devices not shown)")
    ch = r.disk_changes
    if ch.appeared:
        out.append(f"new devices (rates from the next interval): {' '.join(ch.appeared)}")
    if ch.vanished:
        out.append(f"devices gone: {' '.join(ch.vanished)}")
    return out


def _member_util(disks: list[DiskRates], name: str) -> str:
    for d in disks:
        if d.name == name:
            return f"{name} {d.util:.0f}%"
    return name


def _nic_lines(r: Rates, term_width: int | None = None) -> list[str]:
    if not known(r.nics):
        return [_unknown_line("NICs", r.nics)]
    cols = ["rxkB/s", "txkB/s", "rxpck/s", "txpck/s", "rxerr/s", "txerr/s", "rxdrop/s",
            "txdrop/s"]
    width = max([len(n.name) for n in r.nics] + [6])
    # narrow: errors and drops summed per direction pair, still visible when non-zero
    narrow = bool(term_width and width + 10 * len(cols) + 20 > term_width)
    if narrow:
        cols = cols[:4] + ["err/s", "drop/s"]
    out = ["NIC".ljust(width) + "".join(c.rjust(10 if not narrow else 9) for c in cols) + "  state"]
    for n in r.nics:
        vals = [n.rx_bytes_s, n.tx_bytes_s]
        kb = [v / 1024 if known(v) else v for v in vals]
        nums = kb + [n.rx_packets_s, n.tx_packets_s, n.rx_errors_s, n.tx_errors_s,
                     n.rx_dropped_s, n.tx_dropped_s]
        if narrow:
            nums = nums[:4] + [_sum(n.rx_errors_s, n.tx_errors_s), _sum(n.rx_dropped_s, n.tx_dropped_s)]
        state = n.operstate if known(n.operstate) else "?"
        carrier = "" if not known(n.carrier) else (" carrier" if n.carrier else " no-carrier")
        if narrow and state in ("down", "lowerlayerdown", "notpresent") and not n.carrier:
            carrier = ""        # implied by the state: 'lowerlayerdown no-carrier' overflowed 80
        elif narrow and state == "up" and n.carrier is True:
            carrier = ""
        out.append(n.name.ljust(width) + "".join(_num(v, 10 if not narrow else 9, bool(term_width))
                                                 for v in nums)
                   + f"  {state}{carrier}")
    return out


def _sum(a: float | Unknown, b: float | Unknown) -> float | Unknown:
    return a + b if known(a) and known(b) else (a if known(a) else b)


def _dstate_lines(r: Rates, width: int | None = None) -> list[str]:
    if not known(r.dstate):
        return [_unknown_line("D state", r.dstate)]
    if not r.dstate:
        return ["D state: none"]
    out = ["D state:     pid  seconds  command          wchan"]
    for d in r.dstate:
        wchan = d.wchan if known(d.wchan) else "?"
        # one sample (a capture) cannot tell how long: only that it was in D then
        secs = "      -" if r.since_boot else f"{d.seconds:7.1f}"
        comm = d.comm if d.tgid == d.pid else f"{d.comm} (thread of {d.tgid})"
        row = f"         {d.pid:>7}  {secs}  {comm:<16} {wchan}"
        if width and len(row) > width:     # a thread's name and a long wchan: wchan below
            row = f"         {d.pid:>7}  {secs}  {comm}\n{'':{27}}wchan {wchan}"
        out.append(row)
    return out


def _io_lines(r: Rates) -> list[str]:
    if not known(r.top_io):
        return [_unknown_line("Top IO", r.top_io)]
    if not r.top_io:
        return ["Top IO: no process did block IO"]
    out = ["Top IO:      pid     rkB/s     wkB/s  command"]
    for p in r.top_io:
        out.append(f"         {p.pid:>7}{p.read_bytes_s / 1024:10.1f}{p.write_bytes_s / 1024:10.1f}"
                   f"  {p.comm}")
    return out


def format_single(snap: Counters, since: Rates | Unknown, width: int | None = None) -> str:
    """A capture's one sample: what it holds, and why there are no interval rates."""
    source, dstate = visible(snap.source), printable(snap.dstate)   # host strings: see format_block
    taken = (f"taken {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(snap.wall))}"
             if snap.wall_known else "(the tree does not say when it was taken)")
    head = f"capture {source}: one sample {taken}"      # the source may hold a ';' itself
    note = (f"{head}; rates need two samples, so below are averages since boot (like "
            "iostat's first report).")
    if not known(since):
        lines = _wrap(f"{head}; rates need two samples ({since.reason}).", width)
        if known(snap.load):
            lines.append(f"load {snap.load.load1:.2f} {snap.load.load5:.2f} "
                         f"{snap.load.load15:.2f}")
        if known(dstate):
            lines += [f"in D state: {d.comm} (pid {d.pid}, wchan "
                      f"{d.wchan if known(d.wchan) else '?'})" for d in dstate]
        lines += _timeout_lines(snap.timed_out, width)
        return "\n".join(lines) + "\n"
    return "\n".join(_wrap(note, width)) + "\n" + format_block(since, width=width)
