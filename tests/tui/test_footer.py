"""The footer (textual_fixes.Footer) is rebuilt only when what it shows changes: flipping between
screens that show the same keys as last time mounts nothing (Textual's rebuilt every key on
each switch, a fifth of the UI's CPU while an operator flipped screens during a probe run),
and a change of the keys (a field edited, the focus moving to the runs table) still shows at
once."""
from __future__ import annotations

from textual.widgets import Footer as TextualFooter
from textual.widgets._footer import FooterKey

from inspector.tui.fields import EditField
from test_pilot import SCREEN_CLASSES, capture_app, wait_for


def shown_keys(screen) -> list[tuple[str, str]]:
    footer = screen.query_one(TextualFooter)
    return [(k.key, k.description) for k in footer.query(FooterKey)
            if not k.has_class("-command-palette")]      # shown apart from the bindings


def expected_keys(screen) -> list[tuple[str, str]]:
    return [(binding.key, binding.description)
            for (_, binding, _enabled, _tip) in screen.active_bindings.values() if binding.show]


async def test_the_footer_is_kept_across_screen_switches_and_follows_its_bindings():
    app = capture_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.collections >= 1)
        first_keys = {}
        for key in "12345":
            await pilot.press(key)
            await wait_for(pilot, lambda key=key: type(app.screen).__name__ == SCREEN_CLASSES[key])
            await pilot.pause()     # its footer composed
            first_keys[key] = [id(k) for k in app.screen.query(FooterKey)]
            assert first_keys[key]
        for key in "54321":      # the same screens again: the same key widgets, none new
            await pilot.press(key)
            await wait_for(pilot, lambda key=key: type(app.screen).__name__ == SCREEN_CLASSES[key])
            await pilot.pause()     # a footer rebuilt would be mounted by now
            assert [id(k) for k in app.screen.query(FooterKey)] == first_keys[key], key
            assert shown_keys(app.screen) == expected_keys(app.screen)
        # the Probes screen: while its target field is edited (Enter) the keys it types
        # leave the footer; Esc ends the edit, Esc again leads to the runs table, whose keys
        # the footer shows at once
        await pilot.press("6")
        target = app.screen.query_one("#probe-target", EditField)
        await wait_for(pilot, lambda: target.has_focus)
        await pilot.press("enter")
        await wait_for(pilot, lambda: target.editing)
        # the footer follows the bindings on its next recompose
        await wait_for(pilot, lambda: shown_keys(app.screen) == expected_keys(app.screen))
        editing = shown_keys(app.screen)
        assert ("q", "Quit") not in editing, editing
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: app.screen.query_one("#runs").has_focus)
        await wait_for(pilot, lambda: shown_keys(app.screen) == expected_keys(app.screen))
        on_runs = shown_keys(app.screen)
        assert on_runs != editing and ("q", "Quit") in on_runs, on_runs
