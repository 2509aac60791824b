"""`inspector fleet` as text: one line per host, worst first, fitted to the terminal (whole
when the width is None: into a pipe, a file, `--wide`), the hosts per finding code, and the
per-host diff summary. Host strings pass through escapes.visible (a directory name or a
hostname from someone else's snapshot never drives the terminal)."""
from __future__ import annotations

from dataclasses import dataclass

from inspector.compare.fleet import HostDiff, HostRow
from inspector.text.escapes import visible

LEVEL_SHOWN = {"crit": "CRIT", "unknown": "UNKNOWN", "warn": "WARN", "ok": "ok"}


@dataclass
class Column:
    header: str
    least: int         # narrowest it may be squeezed to
    most: int          # widest it is made before the others get room
    squeeze: int = 9   # squeezed in this order when the line is too long (lowest first)


FLEET_COLUMNS = [
    Column("LEVEL", 7, 7), Column("HOST", 12, 28, 6), Column("N", 2, 4), Column("AGE", 3, 10),
    Column("VIRT", 8, 26, 1), Column("STORAGE", 10, 40, 3), Column("NICS", 6, 30, 2),
    Column("DNS", 3, 5), Column("PROBES", 8, 36, 0), Column("WORST", 24, 48, 5),
]


def fleet_lines(rows: list[HostRow], width: int | None, summary: dict[str, int],
                shown: int | None = None, codes: dict[str, int] | None = None,
                stale_after: str = "") -> list[str]:
    cells = [[visible(c) for c in _cells(row)] for row in rows]
    lines = _table(FLEET_COLUMNS, cells, width)
    total = (f"{summary['hosts']} hosts: {summary['crit']} crit, {summary['unknown']} unknown, "
             f"{summary['warn']} warn, {summary['ok']} ok")
    if summary["unreadable_files"]:
        total += f"; {_plural(summary['unreadable_files'], 'unreadable file')}"
    if summary.get("stale"):
        total += f"; {summary['stale']} stale (snapshot older than {stale_after})"
    if shown is not None:
        total += f" ({shown} shown)"
    return lines + [total] + code_lines(codes or {}, width)


def code_lines(codes: dict[str, int], width: int | None) -> list[str]:
    """Hosts per finding code, most first: what a fleet has in common."""
    if not codes:
        return []
    digits = len(str(max(codes.values())))
    lines = ["", "HOSTS  FINDING CODE"]
    lines += [f"{count:>{max(digits, 5)}}  {visible(code)}" for code, count in codes.items()]
    return lines if width is None else [_fit(line, width).rstrip() for line in lines]


def _cells(row: HostRow) -> list[str]:
    if row.error is not None:
        return ["UNREAD", row.host, "", "", "", "", "", "", "", f"{row.file}: {row.error}"]
    age = _age(row.age_s) + (" stale" if row.stale else "")
    return [LEVEL_SHOWN[row.level], row.host, str(row.findings), age, row.virt,
            _storage(row.drives, row.md), ", ".join(row.nic_anomalies),
            "" if row.dns_failover_s is None else f"{row.dns_failover_s:g}s",
            "; ".join(_probe(p) for p in row.probes), row.worst]


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{max(seconds, 0):.0f}s"


def _storage(drives: dict[str, str], arrays: dict[str, str]) -> str:
    """Drives that are not OK by name, worst first, md arrays that are not OK, then how many
    drives and arrays are OK."""
    parts = []
    for level in ("crit", "unknown", "warn"):
        names = [name for name, lv in drives.items() if lv == level]
        if names:
            parts.append(f"{','.join(names)} {level}")
    parts += [f"{name} {state}" for name, state in arrays.items() if state != "ok"]
    ok = sum(lv == "ok" for lv in drives.values()) + sum(st == "ok" for st in arrays.values())
    if ok:
        parts.append(f"{ok} ok")
    return "; ".join(parts)


def _probe(p: dict) -> str:
    if p.get("error"):
        return f"{p['spec']} failed"
    parts = [p["spec"]]
    if isinstance(p.get("p99_us"), (int, float)):
        parts.append(f"p99 {_us(p['p99_us'])}")
    if isinstance(p.get("ops_per_s"), (int, float)):
        parts.append(f"{p['ops_per_s']:.0f}/s")
    return " ".join(parts)


def _us(us: float) -> str:
    return f"{us / 1000:.1f}ms" if us >= 1000 else f"{us:.0f}us"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _table(columns: list[Column], rows: list[list[str]], width: int | None) -> list[str]:
    """Columns as wide as their longest cell up to their `most`, squeezed in their order when
    the line would not fit (and left out when that is not enough), the last one grown into
    what is left; empty columns are left out; cut cells end with '…'. With no width (not a
    terminal, --wide): every column as wide as its longest cell, nothing cut."""
    keep = [i for i, c in enumerate(columns) if any(row[i] for row in rows) or i < 2]
    if width is None:
        columns = [columns[i] for i in keep]
        rows = [[row[i] for i in keep] for row in rows]
        widths = [max([len(c.header)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
        return ["  ".join(text.ljust(w) for text, w in zip(row, widths)).rstrip()
                for row in [[c.header for c in columns], *rows]]
    # too narrow even squeezed: the columns squeezed first go first (never the first two or
    # the last: the level, the host, the worst finding)
    for i in sorted(keep[2:-1], key=lambda i: columns[i].squeeze):
        if sum(columns[k].least for k in keep) + 2 * (len(keep) - 1) <= width:
            break
        keep.remove(i)
    columns = [columns[i] for i in keep]
    rows = [[row[i] for i in keep] for row in rows]
    natural = [max([len(c.header)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    widths = [min(w, c.most) for w, c in zip(natural, columns)]
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    for i in sorted(range(len(columns)), key=lambda i: columns[i].squeeze):
        if excess <= 0:
            break
        cut = min(excess, max(0, widths[i] - columns[i].least))
        widths[i] -= cut
        excess -= cut
    if excess < 0:          # room left: the last column (the worst finding, the reason) takes it
        widths[-1] = min(natural[-1], widths[-1] - excess)
    out = []
    for row in [[c.header for c in columns], *rows]:
        cells = [_fit(text, w) for text, w in zip(row, widths)]
        out.append("  ".join(cells).rstrip())
    return out


def _fit(text: str, width: int) -> str:
    return text.ljust(width) if len(text) <= width else text[:max(width - 1, 0)] + "…"


# ---------------------------------------------------------------------------- compare
DIFF_COLUMNS = [Column("STATUS", 12, 12), Column("HOST", 10, 28, 1),
                Column("REGRESSIONS", 11, 11), Column("CHANGES", 7, 7),
                Column("FILES / WHY NOT COMPARED", 20, 60, 0)]
DIFF_STATUS = {1: "REGRESSED", 2: "NOT COMPARED", 0: "ok"}


def diff_lines(rows: list[HostDiff], width: int | None) -> list[str]:
    cells = []
    for row in rows:
        files = row.error or (row.before if row.before == row.after
                              else f"{row.before} -> {row.after}") or ""
        cells.append([DIFF_STATUS[row.status], row.host,
                      "" if row.error else str(row.regressions),
                      "" if row.error else str(row.changes), files])
    lines = _table(DIFF_COLUMNS, [[visible(c) for c in r] for r in cells], width)
    out = lines[:1]
    for row, line in zip(rows, lines[1:]):
        out.append(line)
        notes = [f"    {visible(note)}" for note in row.notes]
        out += notes if width is None else [_fit(note, width).rstrip() for note in notes]
    regressed = sum(r.status == 1 for r in rows)
    failed = sum(r.status == 2 for r in rows)
    out.append(f"{_plural(len(rows), 'host')}: {regressed} with regressions, {failed} not "
               f"compared, {len(rows) - regressed - failed} without regressions")
    return out
