"""What the Overview costs per live sample: the cycle collector is settled once for a long
session (tui.garbage); a live finding whose figures change every second rewrites its row in
the findings table at most every MESSAGES_EVERY_S (a DataTable redraws every cell on any
cell's change), while a finding that begins, ends or changes level shows at once."""
from __future__ import annotations

import time

from textual.widgets import DataTable

from frozen import view_from_report
from inspector.live.findings import LiveFinding
from inspector.model import Finding, Level
from inspector.tui import garbage, screen_overview
from inspector.tui.app import InspectorApp
from test_console import live_app, ready, rows
from test_pilot import wait_for

SINCE = time.time() - 5


def _with_findings(app: InspectorApp, *findings: tuple[Level, str, str]):
    assert app.report is not None
    view = view_from_report(app.report, 1.0)
    since = SINCE
    view.live_findings = [LiveFinding(Finding(level, subject, message, code=f"live.{subject}"),
                                      since, None, worst=level)
                          for level, subject, message in findings]
    view.findings = [*view.findings, *(lf.as_finding() for lf in view.live_findings)]
    return view


def _show(app: InspectorApp, view) -> None:
    app.live_sample = view
    app.trends.push(view)
    screen = app.screen
    assert isinstance(screen, screen_overview.OverviewScreen)
    screen.show_live(view, None)


def _messages(app: InspectorApp) -> list[str]:
    return [str(r[2]) for r in rows(app.screen.query_one("#findings", DataTable))]


async def test_a_live_findings_figures_are_rewritten_at_most_every_few_seconds(monkeypatch):
    monkeypatch.setattr(screen_overview, "MESSAGES_EVERY_S", 1.5)
    app = live_app("kvm-virtio-guest")
    async with app.run_test(size=(200, 50)) as pilot:
        await ready(app, pilot)
        table = app.screen.query_one("#findings", DataTable)
        writes: list[object] = []
        update_cell = table.update_cell

        def counted(*args, **kwargs):
            writes.append(args[2])
            return update_cell(*args, **kwargs)
        monkeypatch.setattr(table, "update_cell", counted)

        _show(app, _with_findings(app, (Level.CRIT, "cpu", "CPU saturated (99% busy)")))
        await wait_for(pilot, lambda: any("99% busy" in m for m in _messages(app)))
        started = time.monotonic()
        for busy in (98, 97, 96):              # one sample a second would bring these
            _show(app, _with_findings(app, (Level.CRIT, "cpu", f"CPU saturated ({busy}% busy)")))
            await pilot.pause()
        if time.monotonic() - started < 1.5:   # a loaded machine may have taken that long
            assert any("99% busy" in m for m in _messages(app)) and writes == []
        # a finding that begins shows at once, with the latest figures of the other
        shown = time.monotonic()           # the interval runs from this write
        _show(app, _with_findings(app, (Level.CRIT, "cpu", "CPU saturated (95% busy)"),
                                  (Level.WARN, "vda", "vda await 900 ms")))
        await pilot.pause()
        assert any("vda await 900 ms" in m for m in _messages(app))
        assert any("95% busy" in m for m in _messages(app))
        # and figures that changed meanwhile are shown once the interval has passed
        writes.clear()
        _show(app, _with_findings(app, (Level.CRIT, "cpu", "CPU saturated (94% busy)"),
                                  (Level.WARN, "vda", "vda await 900 ms")))
        await pilot.pause()
        # within the interval, the 94 waits; a loaded machine may have let it pass already
        within = time.monotonic() - shown < 1.5
        await pilot.pause(1.6)
        _show(app, _with_findings(app, (Level.CRIT, "cpu", "CPU saturated (93% busy)"),
                                  (Level.WARN, "vda", "vda await 900 ms")))
        await wait_for(pilot, lambda: any("93% busy" in m for m in _messages(app)))
        # the one cell that changed, not the table: once, or twice when the interval passed
        assert "93% busy" in str(writes[-1])
        assert len(writes) == 1 if within else len(writes) <= 2, writes


def test_the_collector_is_settled_once_for_a_long_session():
    """garbage.settle freezes what exists and widens the young generation, once (in a
    process of its own: a frozen test process would keep every later test's cycles)."""
    import subprocess
    import sys
    code = ("import gc\n"
            "from inspector.tui import garbage\n"
            "before = gc.get_threshold()\n"
            "garbage.settle()\n"
            "frozen = gc.get_freeze_count()\n"
            "garbage.settle()\n"
            "print(before[0], gc.get_threshold()[0], frozen > 1000, gc.get_freeze_count() == frozen)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out == ["700", str(garbage.YOUNG_THRESHOLD), "True", "True"], out


def test_the_real_tui_reads_the_host_in_one_child_no_bigger_than_a_fresh_reader(tmux):
    """The binary on the Overview at 200x50: the UI has one child for discovery and live
    sampling (tui.readers), and that child is no bigger than a fresh interpreter importing
    what it runs, measured now (a child forked after Textual was imported, or one reader per
    service, fails this)."""
    import subprocess
    import sys

    import psutil
    tmux.start("", 200, 50)
    tmux.wait(lambda s: "discovered" in s and "every 1 s" in s, "the live overview", timeout=40)
    ui = tmux.inspector()
    time.sleep(1.0)
    readers = ui.children()
    assert len(readers) == 1, [p.cmdline() for p in readers]
    # asyncio's TLS import left out of the UI (tui.lifecycle.skip_tls): OpenSSL not mapped
    with open(f"/proc/{ui.pid}/maps") as maps:
        assert "libssl" not in maps.read()
    fresh = subprocess.Popen(
        [sys.executable, "-c", "import sys, inspector.tui.readers, inspector.live.worker\n"
         "print('ready', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert fresh.stdout is not None and fresh.stdout.readline().strip() == "ready"
        reference = psutil.Process(fresh.pid).memory_info().rss
        child = readers[0].memory_info().rss
    finally:
        fresh.kill()
        fresh.wait()
    print(f"reader child {child / 2**20:.1f} MB, fresh reader {reference / 2**20:.1f} MB")
    assert child <= 1.5 * reference, (child >> 20, reference >> 20)


async def test_a_finding_that_changes_level_is_rewritten_in_place(monkeypatch):
    """As many findings as before (a level changed, or one ended as another began): the
    changed cells are rewritten, not the table cleared and refilled, which lays the whole
    screen out again."""
    app = live_app("kvm-virtio-guest")
    async with app.run_test(size=(200, 50)) as pilot:
        await ready(app, pilot)
        table = app.screen.query_one("#findings", DataTable)
        _show(app, _with_findings(app, (Level.CRIT, "cpu", "CPU saturated (99% busy)")))
        await wait_for(pilot, lambda: any("99% busy" in m for m in _messages(app)))
        clears: list[int] = []
        clear = table.clear

        def counted(*args, **kwargs):
            clears.append(1)
            return clear(*args, **kwargs)
        monkeypatch.setattr(table, "clear", counted)
        _show(app, _with_findings(app, (Level.WARN, "cpu", "CPU busy (85% busy)")))
        await wait_for(pilot, lambda: any("85% busy" in m for m in _messages(app)))
        assert not any("99% busy" in m for m in _messages(app))
        levels = [str(r[0]) for r in rows(table)]
        assert any("WARN" in level for level in levels) and not any("CRIT" in level
                                                                      for level in levels)
        assert clears == []
