"""Common frame of every screen: a tab bar, a status line, the footer, and the refresh hooks.

The app calls `show_state()` when discovery finished (or failed / timed out), `show_live()` on
each live sample; a screen that becomes visible again repaints from the app's latest state.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from inspector.model import Report
from inspector.tui.modes import MODES
from inspector.tui.state import InspectorState
from inspector.tui.textual_fixes import Footer  # lets its old keys go (Textual's keeps them)

if TYPE_CHECKING:
    from inspector.tui.live import LiveView


# the tab labels, longest first: every label must fit (80 columns is the smallest target), so
# the host name and the brand give way before a tab does
TAB_STYLES = ({"virt": "Virt", "net": "Network"},
              {"virt": "Virt", "net": "Net", "overview": "Overview", "processes": "Procs"},
              {"overview": "Over", "storage": "Stor", "virt": "Virt", "net": "Net",
               "probes": "Prob", "processes": "Proc"})


def tab_bar(current: str, host: str, width: int = 200) -> Text:
    """Tabs first (all of them, always), then the host name, then the brand if room is left."""
    tabs: list[tuple[str, str]] = []
    for short in TAB_STYLES:
        tabs = [(mode.name, f" {i} {short.get(mode.name, mode.title)} ")
                for i, mode in enumerate(MODES, 1)]
        if sum(len(label) for _, label in tabs) + 8 <= width:
            break
    text = Text(no_wrap=True, overflow="ellipsis")
    for mode, label in tabs:
        text.append(label, style="bold reverse green" if mode == current else "")
    room = width - text.cell_len - 2
    if room >= 4:
        shown = host if len(host) <= room else host[:room - 1] + "…"
        text.append(f"  {shown}", style="bold cyan")
    room = width - text.cell_len
    if room >= len(" Inspector") + 1:
        text.append(" " * (room - len(" Inspector")) + " Inspector", style="grey50")
    return text


class InspectorScreen(Screen):
    MODE = ""

    @property
    def inspector(self) -> InspectorState:
        """The app's state and actions (InspectorApp is the only app these screens run in)."""
        return cast(InspectorState, self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="tabbar")
        yield Static(id="statusline")
        yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        self.fit_footer()
        self.show_state()

    def on_screen_resume(self) -> None:
        self.fit_footer()
        self.show_state()
        self.fill_charts()      # hidden, the charts missed samples: drawn anew, before show_live
        self.show_live(self.inspector.live_sample, self.inspector.live_error)

    def fill_charts(self) -> None:
        """Draw the live charts anew from the app's trends, then charted_from_trends() (a
        screen without live charts keeps this)."""

    _charted_samples = -1       # the app's trends.samples when this screen's charts were drawn

    def new_sample_to_chart(self) -> bool:
        """Whether the app has a live sample this screen's charts do not have yet, marked as
        charted. A repaint of the same sample (a resize, a resume, a report) must not push it
        onto a chart again: the charts grew a point per visit."""
        samples = self.inspector.trends.samples
        if samples == self._charted_samples:
            return False
        self._charted_samples = samples
        return True

    def charted_from_trends(self) -> None:
        """The charts were just drawn from the app's trends: they hold every sample so far."""
        self._charted_samples = self.inspector.trends.samples

    def show_state(self) -> None:
        if not self.query("#tabbar"):
            return  # not composed yet; on_mount repaints
        state = self.inspector
        report = state.report
        host = "..."
        if report is not None:
            host = str(report.host.hostname) if report.host.hostname else "?"
        width = self.size.width or self.app.size.width
        self.query_one("#tabbar", Static).update(tab_bar(self.MODE, host, width), layout=False)
        status = state.status_line()
        style = "yellow" if state.collect_error else "grey70"
        self.query_one("#statusline", Static).update(Text(f" {status}", style=style,
                                                          no_wrap=True, overflow="ellipsis"),
                                                     layout=False)
        self.show_report(report)

    def on_resize(self) -> None:
        self.fit_footer()
        self.show_state()

    def fit_footer(self) -> None:
        """Below 120 columns the footer's keys sit closer, below 100 the palette key goes:
        at 80 the last keys (? Help, q Quit) were cut off."""
        width = self.size.width or self.app.size.width
        for footer in self.query(Footer):
            footer.compact = width < 120
            footer.show_command_palette = width >= 100

    def show_report(self, report: Report | None) -> None:
        """Repaint from a report (None before the first collection)."""

    def show_live(self, sample: LiveView | None, error: str | None) -> None:
        """Repaint the live figures (a screen without any keeps this)."""

    def show_probe_update(self, run_id: int) -> None:
        """A running probe's new interval, or its start (a screen that shows none keeps
        this)."""

    def show_probe_finished(self, run_id: int) -> None:
        """A probe run ended."""

    def live_reason(self) -> str | None:
        from inspector.tui.live import unavailable_reason
        state = self.inspector
        if state.sampler is None:
            return unavailable_reason(state.root) or "live sampling is off"
        if state.live_error:
            return state.live_error
        if state.live_sample is None:
            return "waiting for the first live sample..."
        return None
