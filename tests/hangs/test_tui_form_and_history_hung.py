"""The TUI's own reads of paths the operator names, on a mount that never answers
(hung_mount.SilentFuse): the Probes form's check of an IO target (a stat in the UI's process
froze the screen for good) and the history screen's read of its database (in a thread worker
the event loop joins at exit: q never ended the TUI). Both are now asked of a forked child
under a deadline; the screen says "no answer from PATH after N s" and the process exits on
time, leaving nothing stuck once the mount answers."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import require_root
from hung_mount import run_hung
from slowness import slack

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _root():
    require_root()

TESTS = Path(__file__).resolve().parent.parent
HINT = "(a hung filesystem? look for processes in D state)"

FORM = textwrap.dedent("""
    import json, sys, time
    from inspector.probes.request import ProbeRequest, check_target, needs_confirmation
    path = sys.argv[1]
    out = {}
    for write in (False, True):
        start = time.monotonic()
        out[f"write={write}"] = [check_target(ProbeRequest("io", path, write=write)),
                                 round(time.monotonic() - start, 2)]
    start = time.monotonic()    # asked again after the check's answer is stale: confirm
    out["confirm"] = [needs_confirmation(ProbeRequest("io", path)),
                      round(time.monotonic() - start, 2)]
    print(json.dumps(out))
""")

# The real history screen, headless, over a database on the silent mount; q once it shows
# why it has nothing.
HISTORY = textwrap.dedent("""
    import asyncio, json, sys, time
    sys.path[:0] = [sys.argv[2] + "/tui", sys.argv[2]]
    from test_pilot import capture_app, wait_for
    from textual.widgets import Static
    from inspector.tui import screen_history
    from inspector.tui.screen_history import HistoryScreen
    screen_history.READ_TIMEOUT_S = 2.0

    async def main():
        app = capture_app(history_db=sys.argv[1])
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.report is not None)
            start = time.monotonic()
            app.open_history()
            await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
            await pilot.press("down", "up")      # keys work while the read waits
            text = lambda: str(app.screen.query_one("#history-range", Static).render())
            await wait_for(pilot, lambda: "no answer" in text(), timeout=10)
            shown, said = time.monotonic() - start, text().splitlines()[0]
            await pilot.press("escape", "q")
        return {"shown": round(shown, 2), "text": said}

    print(json.dumps(asyncio.run(main())), flush=True)
""")


def test_the_probe_form_says_an_io_target_does_not_answer(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    res = run_hung([str(mnt)], [sys.executable, "-c", FORM, str(mnt)], cap=30)
    assert not res["hung"] and res["status"] == 0, res
    out = json.loads(res["stdout"])
    print(out, "ended after", res["seconds"], "s")
    for write in ("write=False", "write=True"):
        problem, took = out[write]
        assert problem == f"no answer from {mnt} after 2 s {HINT}", out
        assert took <= 2 + slack(0.5), out
    reason, took = out["confirm"]              # unanswered: confirmed rather than not
    assert reason.startswith(f"writes a private 64 MiB temporary file inside {mnt}"), out
    assert res["held"] >= 1 and res["stuck_after_release"] == 0, res


def test_the_history_screen_says_its_database_does_not_answer(tmp_path):
    db = tmp_path / "history.sqlite"
    db.write_bytes(b"")
    res = run_hung([str(db)], [sys.executable, "-c", HISTORY, str(db), str(TESTS)], cap=40)
    print(res["stdout"], "ended after", res["seconds"], "s")
    assert not res["hung"] and res["status"] == 0, res
    out = json.loads(res["stdout"])
    assert out["text"] == f"{db}: no answer after 2 s {HINT}", out
    assert out["shown"] <= 2 + slack(1.0), out
    assert res["held"] >= 1 and res["stuck_after_release"] == 0, res
