"""The Probes screen's history chart (issue 9): recorded runs of a probe spec over time, read
from the same database `inspector record` writes (filled here through inspector.record.history)."""
from __future__ import annotations

from textual.widgets import OptionList, Static

from inspector.record.history import HistoryDB, ProbeRun
from inspector.tui.screen_history import HistoryScreen, history_points
from inspector.widgets.chart import LiveChart
from test_pilot import capture_app, current, wait_for

T0 = 1_700_000_000.0


def fill(path: str) -> None:
    recorded = [ProbeRun(ts=T0 + i * 300, probe="io", target="/var/lib/mysql", source="record",
                         tz_offset_s=3600, requests=100, ops_per_s=1000.0 + 100 * i,
                         lat_avg_us=400.0 + i, lat_p99_us=2000.0 + 500 * i,
                         lat_max_us=9000.0, detail={"kind": "io", "summary": {"p50_us": 300.0 + 50 * i}})
                for i in range(12)]
    recorded[5].error = "EIO"
    imported = [ProbeRun(ts=T0 + i * 3600, probe="io", target="/srv", source="import-ioping",
                         ops_per_s=200.0, lat_avg_us=5000.0, lat_max_us=20000.0)
                for i in range(4)]
    with HistoryDB(path) as db:
        db.add_runs(recorded + imported)


def test_history_points_prefer_the_median_and_fall_back_to_the_mean(tmp_path):
    path = str(tmp_path / "h.sqlite")
    fill(path)
    with HistoryDB(path, create=False) as db:
        points, primary = history_points(db.runs("io", "/var/lib/mysql"))
        assert primary == "p50" and len(points) == 12
        assert points[2].primary_ms == 0.4 and points[2].p99_ms == 3.0
        assert points[5].error == "EIO"
        points, primary = history_points(db.runs("io", "/srv"))
        assert primary == "avg" and points[0].primary_ms == 5.0 and points[0].p99_ms is None


async def test_probes_screen_h_charts_a_recorded_spec_over_time(tmp_path):
    path = str(tmp_path / "h.sqlite")
    fill(path)
    app = capture_app(history_db=path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        await pilot.press("6")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")
        await wait_for(pilot, lambda: app.screen.query_one("#probe-target").has_focus)
        await pilot.press("escape", "h")      # out of the form's target field (issue 20)
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        screen = current(app, HistoryScreen)
        latency = screen.query_one("#history-latency", LiveChart)
        ops = screen.query_one("#history-ops", LiveChart)
        await wait_for(pilot, lambda: latency.points == 4 or latency.points == 12)
        options = screen.query_one("#history-specs", OptionList)
        assert options.option_count == 2
        # pick the recorded spec, whichever order the list has
        index = next(i for i, s in enumerate(screen.specs) if s[1] == "/var/lib/mysql")
        options.highlighted = index
        await wait_for(pilot, lambda: screen.spec == ("io", "/var/lib/mysql") and latency.points == 12)
        assert latency.series == ("p50", "p99", "max")
        assert latency.latest() == (0.85, 7.5, 9.0)           # newest run, in ms
        assert ops.latest() == (2100.0,)
        line = str(screen.query_one("#history-range", Static).render())
        assert "12 runs" in line and "1 failed" in line
        assert "2023-11-14 23:13" in line                      # local time (+01:00) of run 0
        # the imported ioping log has means, and says so
        options.highlighted = next(i for i, s in enumerate(screen.specs) if s[1] == "/srv")
        await wait_for(pilot, lambda: screen.spec == ("io", "/srv"))
        assert latency.series[0] == "avg" and latency.points == 4
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")


async def test_history_without_a_database_says_how_to_get_one(tmp_path):
    app = capture_app(history_db=str(tmp_path / "missing.sqlite"))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        app.open_history()
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await wait_for(pilot, lambda: app.screen.query("#history-range"))
        text = app.screen.query_one("#history-range", Static)
        await wait_for(pilot, lambda: "no such history database" in str(text.render()))
        assert "inspector record --probe" in str(text.render())
    assert not (tmp_path / "missing.sqlite").exists()        # reading never creates it
