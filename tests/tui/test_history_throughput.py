"""The TUI's history view with throughput (issue 17): runs that carry MiB/s (an imported
`ioping -R` log, io probe runs) get a MiB/s chart, others none; `t` shows the hour-of-day
table, then the per-day one (the table `inspector history` prints), then the charts again."""
from __future__ import annotations

import io

from rich.console import Console
from textual.widgets import OptionList, Static

from inspector.record.history import HistoryDB, ProbeRun
from inspector.tui.screen_history import HistoryScreen, history_points
from inspector.widgets.chart import LiveChart
from test_pilot import capture_app, current, wait_for


def shown(static: Static) -> str:
    """The text a Static shows (a rich renderable, printed as the screen would)."""
    console = Console(width=120, file=io.StringIO(), record=True)
    console.print(static.content)
    return console.export_text()


T0 = 1_423_954_801.0          # 2015-02-15 08:00:01 JST
MIB = 1 << 20


def fill(path: str) -> None:
    # an ioping -R log: 08:00 runs at 80 MiB/s, 20:00 runs at 20 MiB/s, over three days
    ioping = [ProbeRun(ts=T0 + day * 86400 + half * 43200, probe="io", target="/data",
                       source="import-ioping", tz_offset_s=9 * 3600, ops_per_s=20000.0,
                       bytes_per_s=(80 if half == 0 else 20) * MIB + day * MIB,
                       lat_avg_us=50.0 if half == 0 else 200.0)
              for day in range(3) for half in range(2)]
    dns = [ProbeRun(ts=T0 + i * 300, probe="dns", target="resolv.conf", source="record",
                    ops_per_s=3.0, lat_avg_us=900.0) for i in range(3)]
    with HistoryDB(path) as db:
        db.add_runs(ioping + dns)


def test_points_carry_mib_per_second(tmp_path):
    path = str(tmp_path / "h.sqlite")
    fill(path)
    with HistoryDB(path, create=False) as db:
        points, _ = history_points(db.runs("io", "/data"))
        assert [p.mib_s for p in points] == [80.0, 20.0, 81.0, 21.0, 82.0, 22.0]
        points, _ = history_points(db.runs("dns", "resolv.conf"))
        assert {p.mib_s for p in points} == {None}


async def test_throughput_chart_and_the_hour_and_day_tables(tmp_path):
    path = str(tmp_path / "h.sqlite")
    fill(path)
    app = capture_app(history_db=path)
    async with app.run_test(size=(100, 34)) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        app.open_history()
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        screen = current(app, HistoryScreen)
        await wait_for(pilot, lambda: screen.spec is not None)
        options = screen.query_one("#history-specs", OptionList)
        throughput = screen.query_one("#history-throughput", LiveChart)
        options.highlighted = next(i for i, s in enumerate(screen.specs) if s[0] == "io")
        await wait_for(pilot, lambda: screen.spec == ("io", "/data") and throughput.points == 6)
        assert throughput.display and throughput.latest() == (22.0,)
        await pilot.press("t")
        table = screen.query_one("#history-table", Static)
        await wait_for(pilot, lambda: table.display and "by hour of day" in shown(table))
        text = shown(table)
        assert "MiB/s" in text and "81.0 ±1.00" in text and "21.0 ±1.00" in text
        assert not screen.query_one("#history-latency", LiveChart).display
        await pilot.press("t")
        await wait_for(pilot, lambda: "by day" in shown(table))
        assert "2015-02-15" in shown(table) and "2015-02-17" in shown(table)
        await pilot.press("t")
        await wait_for(pilot, lambda: not table.display)
        assert screen.query_one("#history-latency", LiveChart).display and throughput.display
        # a spec whose runs carry no throughput: no MiB/s chart, no MiB/s column
        options.highlighted = next(i for i, s in enumerate(screen.specs) if s[0] == "dns")
        await wait_for(pilot, lambda: screen.spec == ("dns", "resolv.conf"))
        assert not throughput.display
        await pilot.press("t")
        await wait_for(pilot, lambda: "by hour of day" in shown(table))
        assert "MiB/s" not in shown(table)
