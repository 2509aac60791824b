"""Help screen (`?`) and small modal screens: confirmation and text viewer.

The screen keys (1-7) and `q` act from these too, as from any screen: a key closes the window
(a question is answered no) and then does what it does everywhere."""
from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from inspector.tui.modes import MODES


def passed_keys(prefix: str) -> list[Binding]:
    """The app's screen keys and q, for a modal window (Textual stops the app's bindings at
    a modal screen)."""
    keys = [Binding(str(i), f"leave_to('{mode.name}')", mode.title, show=False,
                    id=f"{prefix}.screen.{mode.name}") for i, mode in enumerate(MODES, 1)]
    return keys + [Binding("q", "leave_to('')", "Quit", id=f"{prefix}.quit")]


class LeavingModal(ModalScreen[Any]):
    """A modal window whose screen keys and q close it and then act."""

    def close(self) -> None:
        self.dismiss(None)

    def action_leave_to(self, mode: str) -> None:
        app = self.app
        self.close()
        # once this window is gone (after the next refresh): switching before the pop left
        # the window's pop to the new mode's stack
        if mode:
            app.call_after_refresh(app.switch_mode, mode)
        else:
            app.call_after_refresh(app.run_action, "quit")


class HelpScreen(LeavingModal):
    """Keys of the screen underneath, generated from the active bindings."""
    HELP_TITLE = "this window"
    BINDINGS = [Binding("escape,question_mark", "dismiss", "Close", id="help.close"),
                *passed_keys("help")]

    def __init__(self, rows: list[tuple[str, str, str]]):
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=True, header_style="bold", expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        table.add_column("from", style="grey62", no_wrap=True)
        for key, description, where in self.rows:
            table.add_row(key, description, where)
        with VerticalScroll(id="help-box", classes="modal-box"):
            yield Static(Text("Keys (from the bindings; Ctrl+P opens the command palette)",
                              style="bold"))
            yield Static(table, id="help-table")
            yield Static(Text("esc closes", style="grey62"))

    async def action_dismiss(self, result: object = None) -> None:
        self.dismiss(None)


class ConfirmScreen(LeavingModal):
    """Yes/no for anything that writes or opens many connections; names target and bound."""
    HELP_TITLE = "this question"
    BINDINGS = [Binding("y", "answer(True)", "Yes, start", id="confirm.yes"),
                Binding("n,escape", "answer(False)", "No", id="confirm.no"),
                *passed_keys("confirm")]

    def __init__(self, title: str, body: str):
        super().__init__()
        self.title_text, self.body = title, body

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="modal-box"):
            yield Static(Text(self.title_text, style="bold yellow"), id="confirm-title")
            yield Static(self.body, id="confirm-body")
            with Horizontal(id="confirm-buttons"):
                yield Button("Start (y)", variant="warning", id="confirm-yes")
                yield Button("Cancel (n)", variant="primary", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    def close(self) -> None:
        self.dismiss(False)


class TextScreen(LeavingModal):
    """A scrollable renderable (evidence, a finding's details); esc closes."""
    HELP_TITLE = "this window"
    BINDINGS = [Binding("escape,enter", "dismiss", "Close", id="text.close"),
                *passed_keys("text")]

    def __init__(self, title: str, body: RenderableType):
        super().__init__()
        self.title_text, self.body = title, body

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="text-box", classes="modal-box"):
            yield Static(Text(self.title_text, style="bold"))
            yield Static(self.body)
            yield Static(Text("esc closes", style="grey62"))

    async def action_dismiss(self, result: object = None) -> None:
        self.dismiss(None)
