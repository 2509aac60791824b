"""The TUI on a recorded timeline: the panels show the interval at the cursor, the keys move
through time, the status line marks recorded findings and probe runs, and the findings shown
are the recorder's at that moment. A database of an hour at 10 s recorded at UTC+09:00 with
the kvm-virtio-guest fixture's device and NIC names, checks every 5 minutes (one WARN) and an
IO probe run."""
from __future__ import annotations

import time
from typing import Any

import pytest
from textual.widgets import DataTable, Static

import slowness
from conftest import fixture_root, run_cli
from inspector.live import rates
from inspector.model import Report
from inspector.record.history import HistoryDB, ProbeRun
from inspector.record.store import SampleWriter
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot
from inspector.tui.recorded_app import RecordedApp
from inspector.tui.screen_storage import StorageScreen
from inspector.tui.timeline import RecordedTimeline, TimelineError
from inspector.widgets import units
from slowness import slack
from synthetic import START, SyntheticHost

JST = 9 * 3600
STEP = 10.0
WARN_AT = START + 1500          # 09:25 JST: md.degraded recorded
PROBE_AT = START + 2400         # 09:40 JST: an IO probe run
_REPORT: dict[str, Report] = {}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("timeline") / "h.sqlite")
    host = SyntheticHost(disks=["vda", "vdb"], nics=["eth0", "lo"], busy=0.8)
    with HistoryDB(path) as h:
        writer = SampleWriter(h.conn)
        prev = host.snapshot(0.0)
        for i in range(1, 361):
            cur = host.snapshot(i * STEP)
            with h.writing("test"):
                writer.append(prev, cur, rates(prev, cur), JST)
            prev = cur
        for k in range(12):
            ts = START + 300 * k + 5
            warn = abs(ts - WARN_AT) < 10
            findings = [{"level": "warn", "subject": "md0", "code": "md.degraded",
                         "message": "md0 is degraded"}] if warn else []
            h.conn.execute("INSERT INTO checks (ts, tz_offset_s, host, worst, findings) "
                           "VALUES (?, ?, 'db1', ?, ?)",
                           (ts, JST, "warn" if warn else "ok", __import__("json").dumps(findings)))
        h.add_runs([ProbeRun(ts=PROBE_AT, probe="io", target="/var/lib/mysql", ops_per_s=1234.0,
                             tz_offset_s=JST)])
    return path


def _app(db: str, at: str) -> RecordedApp:
    root = HostRoot(str(fixture_root("kvm-virtio-guest")))
    if "report" not in _REPORT:
        _REPORT["report"] = build_report(root)
    return RecordedApp(root, RecordedTimeline.open(db, at), collector=lambda r: _REPORT["report"])


async def _settle(pilot, app, predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await pilot.pause(0.05)


def _status(app) -> str:
    return str(app.screen.query_one("#statusline", Static).render())


def _vda(view):
    return next(d for d in view.disks if d.name == "vda")


async def test_keys_move_through_the_recording(db, monkeypatch):
    app = _app(db, "09:20")
    expected = RecordedTimeline.open(db, "09:20")
    async with app.run_test(size=(160, 45)) as pilot:
        await _settle(pilot, app, lambda: app.live_sample is not None and app.report is not None)
        assert _vda(app.live_sample).util == pytest.approx(_vda(expected.view()).util)
        status = _status(app)
        assert "recorded 2025-03-14 09:20:00 UTC+09:00 · 120/360" in status, status
        assert "findings of 09:15:05: worst ok" in status
        strip = status.split(" · ")[1].split()[1]
        assert len(strip) == 32 and "┃" in strip and "▲" in strip and "◆" in strip, strip

        await pilot.press("right_square_bracket")
        await _settle(pilot, app, lambda: "09:20:10" in _status(app))
        expected.move(1)
        assert _vda(app.live_sample).util == pytest.approx(_vda(expected.view()).util)
        assert app.trends.get("disk.vda.util")[-1] == pytest.approx(_vda(expected.view()).util)
        assert len(app.trends.get("disk.vda.util")) == 121      # every interval up to here

        await pilot.press("greater_than_sign")         # the next marker: the WARN check
        await _settle(pilot, app, lambda: "09:25:10" in _status(app))
        assert app.report is not None and [f.code for f in app.report.findings] == ["md.degraded"]
        assert "worst warn" in _status(app) and "warn md.degraded" in _status(app)
        await pilot.press("greater_than_sign")         # then the probe run
        await _settle(pilot, app, lambda: "09:40:00" in _status(app))
        assert "io:/var/lib/mysql 1234 ops/s" in _status(app)
        assert app.report is not None and app.report.findings == []    # 09:40's check: nothing
        await pilot.press("less_than_sign")
        await _settle(pilot, app, lambda: "09:25:10" in _status(app))

        await pilot.press("right_curly_bracket")        # an hour on: clamped at the end
        await _settle(pilot, app, lambda: "10:00:00" in _status(app) and "360/360" in _status(app))
        said: list[str] = []
        notify = app.notify

        def recorded(message: str, **kw: Any) -> None:
            said.append(message)
            notify(message, **kw)
        monkeypatch.setattr(app, "notify", recorded)
        await pilot.press("right_square_bracket")      # nothing after the end: said, not moved
        await _settle(pilot, app, lambda: said == ["end of the recording"])
        assert "360/360" in _status(app)
        await pilot.press("left_curly_bracket")
        await _settle(pilot, app, lambda: "09:00:10" in _status(app))   # the first one


async def test_the_storage_and_network_screens_show_recorded_figures(db):
    app = _app(db, "2025-03-14T00:30:00Z")          # 09:30 JST
    expected = RecordedTimeline.open(db, "09:30").view()
    async with app.run_test(size=(160, 45)) as pilot:
        await _settle(pilot, app, lambda: app.live_sample is not None and app.report is not None)
        await pilot.press("2")
        await _settle(pilot, app, lambda: type(app.screen).__name__ == "StorageScreen")
        await pilot.pause()     # its rows built from the recorded sample
        table = app.screen.query_one("#device-table", DataTable)
        storage = app.screen
        assert isinstance(storage, StorageScreen)
        key = next(r.key for r in storage._rows if r.name == "vda")
        row = [str(getattr(c, "plain", c)) for c in table.get_row(key)]
        vda = _vda(expected)
        for figure in (units.per_s(vda.r_s), units.per_s(vda.w_s), units.latency_ms(vda.await_ms),
                       units.pct(vda.util)):
            assert figure in row, (figure, row)
        await pilot.press("4")
        await _settle(pilot, app, lambda: type(app.screen).__name__ == "NetScreen")
        assert "recorded 2025-03-14 09:30:00" in _status(app)
        assert app.live_sample.nics[0].name == "eth0"
        assert app.live_sample.memory.reason.startswith("not recorded")


def test_opening_errors_are_one_line(db, tmp_path):
    with pytest.raises(TimelineError, match="no such history database"):
        RecordedTimeline.open(str(tmp_path / "none.sqlite"))
    empty = str(tmp_path / "empty.sqlite")
    HistoryDB(empty).close()
    with pytest.raises(TimelineError, match="no recorded samples") as info:
        RecordedTimeline.open(empty)
    assert info.value.status == 1
    with pytest.raises(TimelineError, match="is not a time"):
        RecordedTimeline.open(db, "someday")
    # without a terminal the CLI says what to use instead, before opening anything
    res = run_cli("tui", "--db", db, "--at", "09:30")
    assert res.status == 2 and "top --db FILE --from TIME" in res.err


def _week(path: str) -> int:
    """A week at 10 s (20 disks, 8 NICs, all busy): an hour written by the recorder's writer,
    then copied 167 times an hour later each (same rows, same sizes) by SQLite itself."""
    host = SyntheticHost(disks=20, nics=8)
    with HistoryDB(path) as h:
        writer = SampleWriter(h.conn)
        prev = host.snapshot(0.0)
        with h.writing("test"):
            for i in range(1, 361):
                cur = host.snapshot(i * STEP)
                writer.append(prev, cur, rates(prev, cur), JST)
                prev = cur
        # k outside (CROSS JOIN keeps that order), each table in its key order inside: rows
        # come in key order, appended without the sort of 1.2M rows ORDER BY took (20 % less)
        copies = "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 167) "
        with h.writing("test") as conn:
            columns = [c[1] for c in conn.execute("PRAGMA table_info(sample_intervals)")][2:]
            conn.execute(f"{copies} INSERT INTO sample_intervals SELECT id + 360 * n, "
                         f"ts + 3600 * n, {', '.join(columns)} FROM k CROSS JOIN "
                         "sample_intervals")
            for table in ("sample_disks", "sample_nics", "sample_procs", "sample_findings"):
                columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")][1:]
                conn.execute(f"{copies} INSERT INTO {table} SELECT interval_id + 360 * n, "
                             f"{', '.join(columns)} FROM k CROSS JOIN {table}")
        return h.conn.execute("SELECT COUNT(*) FROM sample_intervals").fetchone()[0]


@pytest.mark.serial
def test_a_week_opens_quickly(tmp_path):
    """The timeline of a week at 10 s opens at its middle, with the view and trends the panels
    need, in well under a second (budget: 1 s on a quiet machine; the bound grows with the
    machine's slowness: beside two busy loops and a test run it took 2.05 s)."""
    path = str(tmp_path / "week.sqlite")
    assert _week(path) == 7 * 8640
    start = time.perf_counter()
    timeline = RecordedTimeline.open(path, f"@{START + 3.5 * 86400}")
    view = timeline.view()
    trends = timeline.trends()
    elapsed = time.perf_counter() - start
    # no check was recorded in this one: said, not shown as "no findings"
    assert [f.code for f in timeline.findings_at()] == ["record.no_check"]
    timeline.close()
    assert len(view.disks) == 20 and len(trends.get("disk.sda.util")) == 300
    assert elapsed < slack(1.0), (elapsed, str(slowness.current()))
