"""What a screen switch costs (tui/textual_fixes): flipping screens during a probe run took
CPU from the run on a small machine. A first visit does not re-parse the stylesheet (Textual
did it twice per new screen); a revisit at the same size neither restyles the whole screen
nor lays it out again, and still looks as it did (the focused widget's highlight included)."""
from __future__ import annotations

from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.screen import Screen

from test_pilot import SCREEN_CLASSES, capture_app, wait_for

SCREEN_KEYS = "23456"     # from the overview; on Probes a digit goes to the target


async def test_first_visits_reuse_the_parsed_stylesheet(monkeypatch):
    reparses: list[str] = []
    reparse = Stylesheet.reparse

    def counting(self):
        reparses.append(type(app.screen).__name__)
        return reparse(self)
    monkeypatch.setattr(Stylesheet, "reparse", counting)
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        await pilot.pause()
        reparses.clear()
        seen = []
        for key in SCREEN_KEYS:
            await pilot.press(key)
            await wait_for(pilot, lambda key=key: type(app.screen).__name__ == SCREEN_CLASSES[key])
            seen.append(type(app.screen).__name__)
            # styled from the stylesheet all the same: the footer has its theme's colour
            assert app.screen.query_one("Footer").styles.background.a > 0, seen
        assert len(set(seen)) == len(SCREEN_KEYS), seen
        assert reparses == [], reparses


async def test_a_revisit_neither_restyles_nor_relays_the_screen_and_looks_the_same(monkeypatch):
    restyled: list[str] = []
    laid_out: list[str] = []
    update_node_styles = DOMNode.update_node_styles
    refresh_layout = Screen._refresh_layout

    def counting_styles(self, animate=True):
        if isinstance(self, Screen):
            restyled.append(type(self).__name__)
        return update_node_styles(self, animate)

    def counting_layout(self, size=None, scroll=False):
        laid_out.append(type(self).__name__)
        return refresh_layout(self, size, scroll)
    monkeypatch.setattr(DOMNode, "update_node_styles", counting_styles)
    monkeypatch.setattr(Screen, "_refresh_layout", counting_layout)
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        async def visit(key: str) -> None:
            """The screen of `key` shown, drawn, and all it had queued handled."""
            await pilot.press(key)
            await wait_for(pilot, lambda: type(app.screen).__name__ == SCREEN_CLASSES[key])
            await pilot.pause()

        await wait_for(pilot, lambda: app.report is not None)
        for key in SCREEN_KEYS[:-1]:             # first visits
            await visit(key)
            await visit("1")
        for key in SCREEN_KEYS[:-1]:
            await visit(key)
            before = app.export_screenshot()
            restyled.clear()
            laid_out.clear()
            await visit("1")
            await visit(key)
            # Textual restyled both screens and laid each out twice (once for the switch at
            # the size it had); what is left is the layout a screen's new content asks for
            assert restyled == [], (key, restyled)
            assert max(laid_out.count(name) for name in laid_out) <= 1, (key, laid_out)
            assert app.export_screenshot() == before, key

