"""Help screen (`?`) and small modal screens: confirmation and text viewer."""
from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class HelpScreen(ModalScreen[None]):
    """Keys of the screen underneath, generated from the active bindings."""
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", id="help.close")]

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


class ConfirmScreen(ModalScreen[bool]):
    """Yes/no for anything that writes or opens many connections; names target and bound."""
    BINDINGS = [Binding("y", "answer(True)", "Yes, start", id="confirm.yes"),
                Binding("n,escape", "answer(False)", "No", id="confirm.no")]

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


class TextScreen(ModalScreen[None]):
    """A scrollable renderable (evidence, a finding's details); esc closes."""
    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close", id="text.close")]

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
