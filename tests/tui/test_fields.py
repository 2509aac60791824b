"""EditField (inspector.tui.fields): a focused field is not an edited one. Screen keys, `?`
and `q` act until Enter or a click starts the edit; while editing they are typed; Esc and
Enter end it; leaving the field ends it."""
from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Button

from inspector.tui.fields import EditField


class DigitsField(EditField):
    def accepts(self, character: str) -> bool:
        return character.isdigit()


class FieldApp(App):
    BINDINGS = [Binding("1", "key('1')"), Binding("q", "key('q')"),
                Binding("question_mark", "key('?')"), Binding("n", "key('n')"),
                Binding("escape", "key('esc')")]

    def __init__(self):
        super().__init__()
        self.acted: list[str] = []
        self.submitted: list[str] = []

    def compose(self) -> ComposeResult:
        yield EditField("abc", id="text")
        yield DigitsField("10", id="digits")
        yield Button("elsewhere", id="other")

    def on_mount(self) -> None:
        self.query_one("#text").focus()

    def action_key(self, name: str) -> None:
        self.acted.append(name)

    def on_input_submitted(self, event: EditField.Submitted) -> None:
        self.submitted.append(event.value)


async def test_keys_act_until_the_edit_starts_and_are_typed_while_editing():
    app = FieldApp()
    async with app.run_test() as pilot:
        field = app.query_one("#text", EditField)
        assert field.has_focus and not field.editing
        await pilot.press("1", "q", "question_mark", "x", "backspace")
        await pilot.pause()
        assert app.acted == ["1", "q", "?"] and field.value == "abc"
        await pilot.press("enter")                     # starts the edit: nothing submitted
        assert field.editing and app.submitted == []
        await pilot.press("1", "q", "question_mark", "backspace", "z")
        await pilot.pause()
        assert field.value == "abc1qz" and app.acted == ["1", "q", "?"]
        await pilot.press("escape")                    # ends the edit, not the app's Esc
        await pilot.pause()
        assert not field.editing and app.acted == ["1", "q", "?"]
        await pilot.press("escape", "q")               # idle: the app's keys again
        await pilot.pause()
        assert app.acted == ["1", "q", "?", "esc", "q"] and field.value == "abc1qz"
        await pilot.press("enter", "ctrl+u", "3", "enter")   # a burst, in order
        await pilot.pause()
        assert field.value == "3" and app.submitted == ["3"] and not field.editing


async def test_a_click_edits_and_leaving_the_field_ends_the_edit():
    app = FieldApp()
    async with app.run_test() as pilot:
        field = app.query_one("#digits", DigitsField)
        await pilot.click("#digits")
        await pilot.pause()
        assert field.has_focus and field.editing
        # a key the field cannot hold is a screen key even while editing
        await pilot.press("n", "5")
        await pilot.pause()
        assert app.acted == ["n"] and sorted(field.value) == ["0", "1", "5"]
        await pilot.press("tab")
        await pilot.pause()
        assert not field.has_focus and not field.editing


async def test_a_field_opened_to_be_typed_into_edits_on_focus():
    app = FieldApp()
    async with app.run_test() as pilot:
        box = EditField("", edit_on_focus=True, id="filter")
        await app.mount(box)
        box.focus()
        await pilot.pause()
        await pilot.press("q", "1")
        await pilot.pause()
        assert box.value == "q1" and app.acted == []
