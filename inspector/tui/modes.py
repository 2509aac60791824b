"""The TUI's modes, its top-level screens in tab order (keys 1..7): the overview, the screen of
each section that has one (inspector.report.sections), the probes, the processes. Data only:
the tab bar reads it without importing a screen, and the app loads each screen class from its
"module:Class"."""
from __future__ import annotations

from dataclasses import dataclass

from inspector.report.sections import SECTIONS


@dataclass(frozen=True)
class Mode:
    name: str       # the mode's name and its screen's MODE
    title: str      # its tab's label
    screen: str     # "module:Class" of its InspectorScreen


MODES: tuple[Mode, ...] = (
    Mode("overview", "Overview", "inspector.tui.screen_overview:OverviewScreen"),
    *(Mode(s.name, s.screen.title, s.screen.ref) for s in SECTIONS if s.screen is not None),
    Mode("probes", "Probes", "inspector.tui.probes.screen:ProbesScreen"),
    Mode("processes", "Processes", "inspector.tui.screen_processes:ProcessesScreen"),
)
