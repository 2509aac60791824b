"""Common frame of every screen: a tab bar, a status line, the footer, and the refresh hooks.

The app calls `show_state()` when discovery finished (or failed / timed out), `show_live()` on
each live sample; a screen that becomes visible again repaints from the app's latest state.
"""
from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Static

from inspector.model import Report


def tab_bar(current: str, host: str) -> Text:
    from inspector.tui.app import SCREENS
    short = {"virt": "Virt", "net": "Network"}
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(" Inspector ", style="bold reverse")
    text.append(f" {host} ", style="bold cyan")
    for i, (mode, title) in enumerate(SCREENS, 1):
        label = f" {i} {short.get(mode, title)} "
        text.append(label, style="bold reverse green" if mode == current else "")
    return text


class InspectorScreen(Screen):
    MODE = ""

    def compose(self) -> ComposeResult:
        yield Static(id="tabbar")
        yield Static(id="statusline")
        yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        self.show_state()

    def on_screen_resume(self) -> None:
        self.show_state()
        app = self.app
        if hasattr(self, "show_live"):
            self.show_live(getattr(app, "live_sample", None), getattr(app, "live_error", None))

    def show_state(self) -> None:
        if not self.query("#tabbar"):
            return  # not composed yet; on_mount repaints
        app = self.app
        report: Report | None = getattr(app, "report", None)
        host = "..."
        if report is not None:
            host = str(report.host.hostname) if report.host.hostname else "?"
        self.query_one("#tabbar", Static).update(tab_bar(self.MODE, host), layout=False)
        status = app.status_line() if hasattr(app, "status_line") else ""
        style = "yellow" if getattr(app, "collect_error", None) else "grey70"
        self.query_one("#statusline", Static).update(Text(f" {status}", style=style,
                                                          no_wrap=True, overflow="ellipsis"),
                                                     layout=False)
        self.show_report(report)

    def show_report(self, report: Report | None) -> None:
        """Repaint from a report (None before the first collection)."""

    def live_reason(self) -> str | None:
        from inspector.tui.live import unavailable_reason
        app: Any = self.app
        if getattr(app, "sampler", None) is None:
            return unavailable_reason(app.root) or "live sampling is off"
        if getattr(app, "live_error", None):
            return app.live_error
        if getattr(app, "live_sample", None) is None:
            return "waiting for the first live sample..."
        return None
