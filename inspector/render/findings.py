"""Findings table: the first thing a report shows."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from rich.console import Group
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


# C0 controls but tab and newline, DEL and C1: ESC from a device's model string, a vendor tool's
# output or a capture made elsewhere would otherwise reach the operator's terminal as a command
# (clear the screen, retitle the window, worse on some terminals). Rich keeps ESC in Text.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _visible(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def printable(obj: Any) -> Any:
    """A copy of a report (or any part of it) whose strings show control characters as \\xNN
    escapes. Values without them are returned as they are."""
    if isinstance(obj, str):
        return _visible(obj) if _CONTROL.search(obj) else obj
    if isinstance(obj, list):
        return [printable(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(printable(v) for v in obj)
    if isinstance(obj, (set, frozenset)):
        return type(obj)(printable(v) for v in obj)
    if isinstance(obj, dict):
        return {printable(k): printable(v) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        copy = object.__new__(type(obj))     # no __init__: frozen, init=False fields alike
        for name, value in getattr(obj, "__dict__", {}).items():
            object.__setattr__(copy, name, printable(value))
        for f in dataclasses.fields(obj):    # slots dataclasses have no __dict__
            object.__setattr__(copy, f.name, printable(getattr(obj, f.name)))
        return copy
    return obj
