"""Findings table: the first thing a report shows."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text

from inspector.model import Finding, Level

LEVEL_STYLE = {Level.CRIT: "bold white on red", Level.WARN: "bold black on yellow",
               Level.UNKNOWN: "bold white on magenta", Level.OK: "green"}


def level_text(level: Level) -> Text:
    return Text(f" {level.label.upper():<4} ", style=LEVEL_STYLE[level])


def render_findings(findings: list[Finding]) -> Table | Text:
    if not findings:
        return Text("No findings: nothing wrong detected.", style="green")
    table = Table(title="Findings", title_justify="left", show_edge=False, expand=False)
    table.add_column("level", no_wrap=True)
    table.add_column("subject", style="bold", no_wrap=True)
    table.add_column("finding")
    for f in findings:
        body = Text(f.message)
        for line in f.evidence:
            body.append(f"\n  evidence: {line}", style="dim")
        if f.advice:
            body.append(f"\n  advice: {f.advice}", style="italic cyan")
        table.add_row(level_text(f.level), f.subject, body)
    return table
