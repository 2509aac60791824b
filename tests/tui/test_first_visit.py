"""A screen's first visit does not re-parse the stylesheet (tui/textual_fixes): Textual did it
twice per new screen, a quarter of the UI's CPU while an operator flipped to each screen for
the first time during a probe run."""
from __future__ import annotations

from textual.css.stylesheet import Stylesheet

from test_pilot import capture_app

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
        await pilot.pause(0.3)
        reparses.clear()
        seen = []
        for key in SCREEN_KEYS:
            await pilot.press(key)
            await pilot.pause(0.1)
            seen.append(type(app.screen).__name__)
            # styled from the stylesheet all the same: the footer has its theme's colour
            assert app.screen.query_one("Footer").styles.background.a > 0, seen
        assert len(set(seen)) == len(SCREEN_KEYS), seen
        assert reparses == [], reparses
