"""EditField: a text field that takes keys only while it is being edited on purpose.

The k9s/lazygit rule: a focused field is not yet an edited one. Until Enter (or a click) starts
the edit, every key the field would type acts as everywhere else: the screen keys, `?`, `q`.
While editing, the keys are typed; Esc or Enter ends the edit (Enter also submits), and so does
leaving the field. The footer says which (`Enter Edit` / `Esc Done`).

Subclasses may limit what the field holds (`accepts`): a key it cannot hold is never typed and
acts as a screen key, even while editing (digits only in a number field: `n` still works).
"""
from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input

# Input's actions that change the text or move within it: idle, the field leaves their keys
# (Home, End, arrows, Backspace ...) to the screen
EDIT_ACTIONS = frozenset({
    "cursor_left", "cursor_right", "cursor_left_word", "cursor_right_word", "delete_left",
    "delete_right", "delete_left_word", "delete_right_word", "delete_left_all",
    "delete_right_all", "home", "end", "select_all", "submit", "cut", "copy", "paste"})


def _keys_of(bindings: list[BindingType]) -> dict[str, str]:
    keys: dict[str, str] = {}
    for binding in bindings:
        if isinstance(binding, Binding):
            for key in binding.key.split(","):
                keys.setdefault(key.strip(), binding.action)
    return keys


EDIT_KEYS = {key: action for key, action in _keys_of(Input.BINDINGS).items()
             if action.split("(")[0] in EDIT_ACTIONS and action != "submit"}


class EditField(Input):
    """An Input that types only while `editing` (see the module's docstring)."""
    DEFAULT_CSS = """
    EditField.-idle > .input--cursor { background: $surface; color: $foreground;
                                       text-style: none; }
    EditField.-editing { border: tall $success; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "edit", "Edit", id="field.edit"),
        Binding("escape", "done", "Done", id="field.done"),
    ]

    editing: reactive[bool] = reactive(False, init=False)

    class EditingChanged(Message):
        """The field started or ended an edit (the screen may show other hints)."""

        def __init__(self, field: EditField, editing: bool):
            super().__init__()
            self.field, self.editing = field, editing

        @property
        def control(self) -> EditField:
            return self.field

    def __init__(self, value: str | None = None, *, edit_on_focus: bool = False,
                 escape_clears: bool = False, **kw):
        """`edit_on_focus`: a field opened to be typed into (a filter box `/` shows) edits
        as soon as it has the focus; `escape_clears`: Esc empties it as it ends the edit (a
        filter: Enter keeps it, Esc drops it)."""
        kw.setdefault("select_on_focus", False)
        super().__init__(value, **kw)
        self.edit_on_focus = edit_on_focus
        self.escape_clears = escape_clears
        self.add_class("-idle")
        self.cursor_blink = False

    # ------------------------------------------------------------------ state
    def start_editing(self) -> None:
        if not self.has_focus:
            self.focus()
        self.editing = True

    def stop_editing(self) -> None:
        self.editing = False

    def watch_editing(self, editing: bool) -> None:
        self.set_class(editing, "-editing")
        self.set_class(not editing, "-idle")
        self.cursor_blink = editing
        if editing:
            self.cursor_position = len(self.value)
        self.refresh_bindings()
        self.post_message(self.EditingChanged(self, editing))

    def accepts(self, character: str) -> bool:
        """Whether the field can hold this character (a number field: digits only)."""
        return True

    def check_consume_key(self, key: str, character: str | None) -> bool:
        """Textual leaves out of the binding chain the keys this says the field types: only
        while editing, only what it accepts."""
        return (self.editing and character is not None and character.isprintable()
                and self.accepts(character))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "edit":
            return not self.editing
        if action == "done":
            return self.editing
        if action in EDIT_ACTIONS:
            return self.editing
        return True

    # ------------------------------------------------------------------ actions
    def action_edit(self) -> None:
        self.start_editing()

    def action_done(self) -> None:
        self.stop_editing()

    # ------------------------------------------------------------------ events
    async def _on_key(self, event: events.Key) -> None:
        if not self.editing:
            if event.key == "enter":
                event.stop()
                event.prevent_default()
                self.start_editing()
                return
            # not typed: the key goes on to the screen's and the app's bindings (prevented
            # here only; the bubble clears it)
            event.prevent_default()
            return
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            if self.escape_clears:
                self.value = ""
            self.stop_editing()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.stop_editing()
            await self.action_submit()
            return
        if event.is_printable and event.character is not None and not self.accepts(event.character):
            event.prevent_default()        # not typed, and not stopped: a screen key
            return
        # the field's own editing keys act now, in the order they came: left to the
        # bindings, they would run only once the key had bubbled to the app, after the next
        # key of a burst had already been typed (`C-u 3` typed the 3, then cleared it)
        action = EDIT_KEYS.get(event.key)
        if action is not None and not event.is_printable:
            event.stop()
            event.prevent_default()
            await self.run_action(action)
        # else Input's own handler (next in the class order) types it

    # Textual calls each class's handler in turn (Input's after these): no super() calls
    def _on_focus(self, event: events.Focus) -> None:
        if self.edit_on_focus:
            self.editing = True

    def _on_blur(self, event: events.Blur) -> None:
        self.editing = False

    async def _on_mouse_down(self, event: events.MouseDown) -> None:
        self.editing = True

    def _on_paste(self, event: events.Paste) -> None:
        self.editing = True      # a paste is on purpose
