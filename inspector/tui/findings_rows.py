"""The Overview's findings list, in order (pure: no Textual here).

Live findings that are active come first ("since 14:02:10"), then the discovery findings and
the sampler's own (NIC stall, D state) worst first, then the live findings that ended this
session ("ended 14:05:01"), kept until the TUI quits; OK findings last, folded unless shown.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from inspector.health import sort_findings
from inspector.model import Finding, Level
from inspector.tui.modelview import badge

LIVE_PREFIX = "live."


@dataclass(frozen=True)
class FindingRow:
    finding: Finding          # what Enter details (a live one with its times as evidence)
    badge: Text
    subject: str
    message: str
    dim: bool = False         # ended: kept for the session, drawn quieter


def clock(wall: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(wall))


def finding_rows(discovered: list[Finding], view: Any, show_ok: bool
                 ) -> tuple[list[FindingRow], int]:
    """(rows to show, how many OK findings are folded away)."""
    live = list(getattr(view, "live_findings", None) or [])
    sampled = [f for f in (getattr(view, "findings", None) or [])
               if not (f.code or "").startswith(LIVE_PREFIX)]
    active = sorted((lf for lf in live if lf.ended is None),
                    key=lambda lf: (-lf.finding.level.severity, lf.since))
    ended = sorted((lf for lf in live if lf.ended is not None), key=lambda lf: -lf.ended)
    rows = [FindingRow(lf.as_finding(), badge(lf.finding.level), lf.finding.subject,
                       f"since {clock(lf.since)}  {lf.finding.message}") for lf in active]
    others = sort_findings(list(discovered) + sampled)
    rows += [FindingRow(f, badge(f.level), f.subject, f.message) for f in others
             if f.level != Level.OK]
    rows += [FindingRow(lf.as_finding(), Text(" ENDED ", style="grey62"), lf.finding.subject,
                        f"ended {clock(lf.ended)} (since {clock(lf.since)}, worst "
                        f"{lf.worst.label}): {lf.finding.message}", dim=True)
             for lf in ended if lf.ended is not None]
    ok = [f for f in others if f.level == Level.OK]
    if show_ok:
        rows += [FindingRow(f, badge(f.level), f.subject, f.message) for f in ok]
        return rows, 0
    return rows, len(ok)
