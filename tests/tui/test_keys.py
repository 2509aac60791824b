"""Keys that never surprise: the screen keys (1-7), `?` and `q` act from every screen and
every window Inspector opens (help, a finding's details, a question), and the help names
where each key acts in plain words, never a class name."""
from __future__ import annotations

import pytest

from inspector.tui.modes import MODES
from inspector.tui.screen_help import HelpScreen, TextScreen
from test_pilot import capture_app
from test_pilot import wait_for as wait_until


async def wait_for(pilot, predicate, timeout: float = 30.0, message=None) -> None:
    try:
        await wait_until(pilot, predicate, timeout)
    except AssertionError as exc:
        raise AssertionError(message() if message else str(exc)) from None

SCREEN_OF = {str(i): mode.name for i, mode in enumerate(MODES, 1)}


def mode_of(app) -> str:
    return getattr(app.screen, "MODE", type(app.screen).__name__)


@pytest.mark.parametrize("opener,window", [("question_mark", HelpScreen), ("e", TextScreen),
                                           ("enter", TextScreen)])
async def test_screen_keys_and_q_act_from_every_window(opener, window):
    app = capture_app("flash-mixed")      # findings to open
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        for key in ("7", "2", "4"):
            await pilot.press(opener)
            await wait_for(pilot, lambda: isinstance(app.screen, window),
                           message=lambda key=key: f"{opener} then {key}: {app.screen}")
            await pilot.press(key)
            await wait_for(pilot, lambda key=key: mode_of(app) == SCREEN_OF[key])
            assert len(app.screen_stack) == 1       # the window is gone, not hidden
            await pilot.press("1")
            await wait_for(pilot, lambda: mode_of(app) == "overview")
        await pilot.press(opener)
        await wait_for(pilot, lambda: isinstance(app.screen, window))
        await pilot.press("q")
        await wait_for(pilot, lambda: app._exit)


async def test_help_names_places_not_classes():
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        for key in sorted(SCREEN_OF, key=lambda k: SCREEN_OF[k] == "probes"):   # probes last: its form keeps digits (issue 26, another part)
            await pilot.press(key)
            await wait_for(pilot, lambda key=key: mode_of(app) == SCREEN_OF[key])
            await pilot.pause()     # its focus settled: the help rows follow the focus
            places = {where for _, _, where in app.help_rows()}
            assert "everywhere" in places
            assert not any(p.endswith(("Screen", "Table", "Input", "App")) or "_" in p
                           for p in places), places
        app.switch_mode("overview")
        await wait_for(pilot, lambda: mode_of(app) == "overview")
        await pilot.pause()
        rows = {d: where for _, d, where in app.help_rows()}
        assert rows["Finding details"] == "findings list" and rows["Quit"] == "everywhere"
        assert rows["OK findings"] == "Overview"
