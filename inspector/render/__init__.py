"""Rich rendering of the report: findings first, then one renderer per section."""
from __future__ import annotations

import importlib

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from inspector.model import Report, Unknown
from inspector.render.findings import render_findings

SECTION_TITLES = {"storage": "Storage", "virt": "Virtualization", "net": "Network",
                  "dns": "Resolver", "cpu": "CPU and power"}
_RENDERERS = {"storage": "storage", "virt": "virt", "net": "net", "dns": "resolver", "cpu": "cpu"}


def render_section(name: str, section: object) -> RenderableType:
    if isinstance(section, Unknown):
        return Text(str(section), style="yellow")
    try:
        module = importlib.import_module(f"inspector.render.{_RENDERERS[name]}")
        return module.render(section)
    except Exception as exc:  # a renderer bug must not hide the rest of the report
        return Text(f"cannot render {name}: {type(exc).__name__}: {exc}", style="red")


def render_report(report: Report, console: Console) -> None:
    host = report.host
    console.print(Text.assemble(("Inspector report ", "bold"), (f"{host.hostname}", "bold cyan"),
                                f"  kernel {host.kernel}  {host.machine}  source: {host.source}"))
    console.print(render_findings(report.findings))
    for name, section in report.sections.items():
        console.print(Panel(render_section(name, section), title=SECTION_TITLES.get(name, name),
                            title_align="left", border_style="blue"))


def render_timings(report: Report) -> RenderableType:
    from rich.table import Table
    table = Table(title="collector timings", show_edge=False)
    table.add_column("collector")
    table.add_column("seconds", justify="right")
    for name, seconds in report.timings.items():
        table.add_row(name, f"{seconds:.4f}")
    return Group(table)
