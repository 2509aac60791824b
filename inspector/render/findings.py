"""Findings table: the first thing a report shows."""
from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from inspector.model import Finding, Level

# re-exported: the TUI, check and report take the one escaping rule (inspector.text.escapes) here
from inspector.text.escapes import printable  # noqa: F401

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
    table.add_column("finding", overflow="fold")
    for f in findings:
        table.add_row(level_text(f.level), f.subject, finding_body(f))
    return table


def finding_body(f: Finding) -> Group | Text:
    """The message, then evidence and advice in a grid so their wrapped lines stay indented
    under their own text at 80 columns instead of running back under the label."""
    if not f.evidence and not f.advice:
        return Text(f.message)
    details = Table.grid(padding=(0, 1))
    details.add_column(no_wrap=True)
    details.add_column(ratio=1, overflow="fold")   # a long path or uuid is folded, never cut
    for line in f.evidence:
        details.add_row(Text(" evidence", style="dim"), Text(line, style="dim"))
    if f.advice:
        details.add_row(Text(" advice", style="italic cyan"), Text(f.advice, style="italic cyan"))
    return Group(Text(f.message), details)

