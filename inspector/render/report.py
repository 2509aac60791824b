"""Rich rendering of the report: findings first, then one renderer per section."""
from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from inspector.model import Level, Report, Unknown
from inspector.render.findings import render_findings
from inspector.report.sections import BY_NAME, NAMES, load
from inspector.text.escapes import printable, visible


def render_section(name: str, section: object) -> RenderableType:
    if isinstance(section, Unknown):
        return Text(str(section), style="yellow")
    try:
        return load(BY_NAME[name].render)(section)
    except Exception as exc:  # a renderer bug must not hide the rest of the report
        return Text(f"cannot render {name}: {type(exc).__name__}: {exc}", style="red")


def render_report(report: Report, console: Console) -> None:
    console.print(render_header(report))
    if not report.findings and set(report.sections) != set(NAMES):
        # `--section cpu` with nothing wrong says nothing about storage or the network
        names = ", ".join(_title(n) for n in report.sections)
        console.print(Text(f"No findings in the sections read ({names}); the others were "
                           "not checked.", style="green"))
    else:
        console.print(render_findings(report.findings))
    for name, section in report.sections.items():
        console.print(Panel(render_section(name, section), title=_title(name),
                            title_align="left", border_style="blue"))


def _title(name: str) -> str:
    return BY_NAME[name].title if name in BY_NAME else name


def render_header(report: Report) -> RenderableType:
    """Short lines that fit 80 columns: who, what it is and how it is, where it was read."""
    host = printable(report.host)    # a hostname with ESC or U+202E must not act on the terminal
    first = Text.assemble(("Inspector report  ", "bold"),
                          (_known_or(host.hostname, "(hostname not recorded)"), "bold cyan"))
    if host.source == "live":
        first.append("  live", style="dim")
    second = Text("kernel not recorded" if isinstance(host.kernel, Unknown) else
                  f"kernel {host.kernel} {_known_or(host.machine, '?')}")
    virt = report.sections.get("virt")
    if virt is not None and not isinstance(virt, Unknown):
        from inspector.render.virt import layers_line
        second.append(" · ")
        second.append(visible(layers_line(virt)), style="magenta")
    counts = [f"{sum(1 for f in report.findings if f.level is level)} {level.label}"
              for level in (Level.CRIT, Level.WARN, Level.UNKNOWN)]
    second.append(" · findings " + ", ".join(c for c in counts if not c.startswith("0 "))
                  if any(not c.startswith("0 ") for c in counts) else " · no findings")
    if host.source == "live":
        return Group(first, second)
    return Group(first, second, Text(f"source: {host.source}" + _captured(host.collected_at),
                                     style="dim", overflow="fold"))


def _captured(collected_at: float) -> str:
    """When the capture was taken, in UTC and in age: a days-old capture reads differently."""
    if not collected_at:
        return " · capture time not recorded"
    if not isinstance(collected_at, (int, float)) or not 0 < collected_at < 253402300800:
        return " · capture time not a plausible time"     # after the year 9999: a forged file
    import time
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(collected_at))
    age = time.time() - collected_at
    if age < 0:
        return f" · captured {stamp}"
    for unit, seconds in (("d", 86400), ("h", 3600), ("min", 60)):
        if age >= seconds:
            return f" · captured {stamp} ({age / seconds:.0f} {unit} ago)"
    return f" · captured {stamp} (just now)"


def _known_or(value: object, fallback: str) -> str:
    return fallback if isinstance(value, Unknown) else str(value)


def render_timings(report: Report) -> RenderableType:
    from rich.table import Table
    table = Table(title="collector timings", show_edge=False)
    table.add_column("collector")
    table.add_column("seconds", justify="right")
    for name, seconds in report.timings.items():
        table.add_row(name, f"{seconds:.4f}")
    return Group(table)
