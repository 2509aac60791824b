"""A screen's live charts show each sample once, however often the operator comes back to it:
each visit used to repaint the last sample again (the Storage and Virtualization charts grew a
point per visit, on a frozen sampler whose figures never change), and what came while the screen
was hidden was missing. They are drawn anew from the app's trends when the screen resumes."""
from __future__ import annotations

from textual.pilot import Pilot

from inspector.tui.app import InspectorApp
from inspector.widgets.chart import LiveChart
from test_pilot import SCREEN_CLASSES, wait_for
from test_snapshots import frozen_app, wait_ready


def charts(app: InspectorApp) -> dict[str | None, int]:
    return {chart.id: chart.points for chart in app.screen.query(LiveChart)}


async def visit(app: InspectorApp, pilot: Pilot[None], key: str) -> None:
    """The screen of `key` shown, and its resume (the charts redrawn) handled."""
    await pilot.press(key)
    await wait_for(pilot, lambda: type(app.screen).__name__ == SCREEN_CLASSES[key])
    await pilot.pause()


async def test_charts_do_not_grow_by_visits():
    app = frozen_app("kvm-virtio-guest")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        seen = {}
        for key, chart_ids in (("2", {"await-chart", "iops-chart"}), ("3", {"steal-chart"})):
            await visit(app, pilot, key)
            first = charts(app)
            assert chart_ids <= set(first), first
            for _ in range(3):      # away and back
                await visit(app, pilot, "1")
                await visit(app, pilot, key)
            assert charts(app) == first, (key, first, charts(app))
            seen.update(first)
        # each one shows the trend it draws, one point per sample the app has
        steal = len(app.trends.get("cpu.steal"))
        assert steal > 100 and seen["steal-chart"] == steal


async def test_a_hidden_screen_catches_up_on_what_it_missed():
    app = frozen_app("kvm-virtio-guest")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await visit(app, pilot, "3")
        before = charts(app)["steal-chart"]
        await visit(app, pilot, "1")
        for _ in range(5):          # five samples while the Virtualization screen is hidden
            app.trends.push(app.live_sample)
        await visit(app, pilot, "3")
        assert charts(app)["steal-chart"] == min(before + 5, app.trends.capacity)
