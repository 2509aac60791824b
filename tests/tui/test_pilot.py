"""Pilot tests of the TUI: navigation, help, filter, hung collector, probes and confirmation."""
from __future__ import annotations

import dataclasses
import inspect
import io
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psutil
import pytest
from rich.console import Console, Group
from rich.text import Text
from textual.command import CommandList, CommandPalette
from textual.content import Content
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static
from textual.widgets.data_table import ColumnKey

from conftest import fixture_root
from inspector.model import Finding, HostIdentity, Level, Report
from inspector.probes.base import ProbeKind
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot
from inspector.tui.app import InspectorApp
from inspector.tui.fields import EditField
from inspector.tui.flow_canvas import FlowCanvas
from inspector.tui.modelview import detail_table, fmt_value
from inspector.tui.probes.runs import LiveRun, ProbeRequest
from inspector.tui.probes.screen import ProbesScreen, RunPanel
from inspector.tui.screen_help import ConfirmScreen, HelpScreen
from inspector.tui.screen_storage import StorageScreen
from inspector.widgets.chart import LiveChart
from inspector.widgets.histogram import LatencyHistogram
from inspector.widgets.probe_chart import LatencyChart, RateChart, RunChart

S = TypeVar("S", bound=Screen[Any])
SCREEN_CLASSES = {"1": "OverviewScreen", "2": "StorageScreen", "3": "VirtScreen",
                  "4": "NetScreen", "5": "DnsScreen", "6": "ProbesScreen"}


_REPORTS: dict[str, Report] = {}


def capture_app(name: str = "kvm-virtio-guest", **kw) -> InspectorApp:
    """The app on a fixture root; discovery runs once per root per session (it is the same
    capture every time) so the tests spend their time on the UI."""
    root = HostRoot(str(fixture_root(name)))
    if name not in _REPORTS:
        _REPORTS[name] = build_report(root)
    kw.setdefault("collector", lambda r: _REPORTS[name])
    return InspectorApp(root, sampler=False, **kw)


async def wait_for(pilot: Pilot[Any], predicate: Callable[..., object], timeout: float = 30.0,
                   step: float = 0.05) -> None:
    """Until `predicate()` (called without arguments: a lambda may bind a loop's variable
    as a default). A hang fails it, not a slow machine (the suite runs beside
    others' work: a first screen mount took over 10 s in a CI run)."""
    deadline = time.monotonic() + timeout
    # short pauses first, doubling up to `step`: most waits end a few ms after a key's
    # handling, and each pause also waits for the screen's queued messages (CPU)
    pause = min(step, 0.005)
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout:g} s: {_source_of(predicate)}")
        await pilot.pause(pause)
        pause = min(step, pause * 2)


def _source_of(predicate: Callable[..., object]) -> str:
    """The predicate's source line, to say which wait failed."""
    try:
        return inspect.getsource(predicate).strip()
    except (OSError, TypeError):
        return repr(predicate)


def text_of(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_navigate_every_screen_on_a_capture():
    app = capture_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.report is not None
                       and "capture kvm-virtio-guest" in text_of(app, "#statusline"))
        for key, name in SCREEN_CLASSES.items():
            await pilot.press(key)
            await wait_for(pilot, on_screen(app, name))
        # Probes opens with its target field focused but not edited (issue 26): esc leaves the
        # form, and digits switch screens from it as from anywhere
        focused = app.screen.focused
        assert focused is not None and focused.id == "probe-target"
        await pilot.press("escape", "1")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "OverviewScreen")
        # the live panels say plainly that a capture has no live data
        await wait_for(pilot, lambda: "capture: no live data"
                       in app.screen.query_one("#dashboard", FlowCanvas).text())
        assert "kvm-virtio-guest" in text_of(app, "#identity")
        # esc goes back to the overview from another screen
        await pilot.press("3")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "VirtScreen")
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "OverviewScreen")

        # `?` help comes from the bindings: app-wide ones and the storage screen's own
        await pilot.press("2")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "StorageScreen")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        descriptions = {d for _, d, _ in current(app, HelpScreen).rows}
        assert {"Overview", "Probes", "Quit", "Filter", "IO probe here"} <= descriptions
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "StorageScreen")

        # `/` filters the device table and selects the first match; esc clears the filter
        table = app.screen.query_one("#device-table", DataTable)

        def labels() -> list[str]:
            return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]

        all_labels = labels()
        assert any(lbl.startswith("vda") for lbl in all_labels), all_labels
        await pilot.press("slash")
        await wait_for(pilot, lambda: app.screen.query_one("#tree-filter", EditField).editing)
        await pilot.press(*"vda")

        def filtered_to_vda() -> bool:
            shown = labels()
            return bool(shown) and len(shown) < len(all_labels) and all("vda" in lbl for lbl in shown)
        await wait_for(pilot, filtered_to_vda)
        selected = current(app, StorageScreen)._selected
        assert selected is not None and selected.name.startswith("vda") and table.cursor_row == 0
        detail = app.screen.query_one("#device-detail", Static).content
        assert isinstance(detail, Group) and isinstance(detail.renderables[0], Text)
        assert detail.renderables[0].plain.startswith("vda")     # the detail follows
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(labels()) == len(all_labels))

        # the command palette reaches every screen (and the probes)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"netw")
        # the search runs in a worker: Enter picks what is highlighted once it has answered
        await wait_for(pilot, lambda: palette_first(app) == "Screen: Network")
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "NetScreen")


def on_screen(app: InspectorApp, name: str) -> Callable[[], bool]:
    """A predicate: the app shows the screen class `name`."""
    return lambda: type(app.screen).__name__ == name


def current(app: InspectorApp, kind: type[S]) -> S:
    """The screen shown, which the test expects to be a `kind`."""
    screen = app.screen
    assert isinstance(screen, kind), (screen, kind)
    return screen


def start_run(app: InspectorApp, request: ProbeRequest) -> LiveRun:
    """`request` started from the Probes screen, straight (no form, no confirmation)."""
    run = current(app, ProbesScreen).start_request(request)
    assert run is not None, f"refused: {request}"
    return run


def palette_first(app: InspectorApp) -> str | None:
    """The command palette's first hit once its list shows: its title, as plain text."""
    hits = app.screen.query_one(CommandList)
    if not hits.display or hits.option_count == 0:
        return None
    prompt = hits.get_option_at_index(0).prompt
    text = prompt.plain if isinstance(prompt, (Text, Content)) else str(prompt)
    return text.splitlines()[0]


async def test_hung_collector_shows_timed_out_and_keys_still_work():
    """A collector that never returns: its bound passing is said on the status line, and
    while the next one hangs the screens mount and answer, and ctrl+c quits."""
    release = threading.Event()
    calls: list[float] = []

    def hung(root):
        calls.append(time.monotonic())
        release.wait(120)
        return build_report(root)

    app = InspectorApp(HostRoot(str(fixture_root("kvm-virtio-guest"))), collector=hung,
                       collect_timeout=1.0, sampler=False)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.collect_error is not None)
            assert app.collect_error and "timed out after 1 s" in app.collect_error
            assert not app.collecting
            await wait_for(pilot, lambda: "timed out after 1 s" in text_of(app, "#statusline"))
            # the next collection hangs with a bound no loaded machine reaches while the
            # screens mount (they took over 5 s in a CI run): the keys cannot be waiting on it
            app.collect_timeout = 120.0
            await pilot.press("r")
            await wait_for(pilot, lambda: len(calls) == 2 and app.collecting)
            # esc first on Probes: its target field has focus (issue 20)
            for keys, name in ((("6",), "ProbesScreen"), (("escape", "2"), "StorageScreen"),
                               (("1",), "OverviewScreen")):
                await pilot.press(*keys)
                await wait_for(pilot, on_screen(app, name))
            assert app.collecting and not release.is_set()    # it still hangs
            await pilot.press("ctrl+c")  # quits (no "press ctrl+q" hint), even mid-hang
            await wait_for(pilot, lambda: app.return_code is not None)
            assert app.collecting
        assert app.return_code == 0
    finally:
        release.set()


async def test_collections_never_overlap():
    active = [0]
    peak = [0]
    calls = [0]
    lock = threading.Lock()

    def slow(root):
        with lock:
            active[0] += 1
            calls[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.15)
        with lock:
            active[0] -= 1
        return Report(host=HostIdentity("h", "k", "m", "live", 0.0), sections={})

    app = InspectorApp(HostRoot("/"), collector=slow, refresh=0.01, sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")  # a manual refresh while one runs must not start a second
        await wait_for(pilot, lambda: calls[0] >= 4, timeout=5)
    assert peak[0] == 1


async def start_probe(app, pilot, kind: str, target: str, seconds: str = "5",
                      concurrency: str = "1", write: bool = False) -> None:
    await pilot.press("6")
    await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")
    screen = app.screen
    screen.prefill(kind, target)
    screen.query_one("#probe-seconds").value = seconds
    screen.query_one("#probe-concurrency").value = concurrency
    screen.query_one("#probe-write").value = write
    await pilot.pause()     # the fields' Changed messages handled before the keys below
    await pilot.press("escape")  # leave the form field: keys go to the screen again
    await wait_for(pilot, lambda: screen.query_one("#runs", DataTable).has_focus)
    await pilot.press("s")


async def test_io_probes_chart_stop_and_sighup_stops_the_rest(tmp_path):
    target = tmp_path / "probe.bin"
    target.write_bytes(os.urandom(4 << 20))
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await start_probe(app, pilot, "io", str(target), seconds="60")
        await wait_for(pilot, lambda: app.probes.runs and app.probes.runs[0].last is not None)
        first = app.probes.runs[0]
        await wait_for(pilot, lambda: len(app.screen.query_one("#panel-a LatencyChart",
                                                               LatencyChart).p50) >= 2)
        assert first.active and first.last is not None and first.last.ops > 0
        # a second run at the same time (several probes at once); the form path is covered
        # above, so this one starts straight from a request
        start_run(app, ProbeRequest(ProbeKind.IO, str(target), duration=60))
        await wait_for(pilot, lambda: len(app.probes.runs) == 2 and app.probes.runs[1].last)
        second = app.probes.runs[1]
        assert len(app.probes.active()) == 2
        # side by side: the highlighted (second) run pinned to panel B, the first back in A
        await pilot.press("c")
        table = app.screen.query_one("#runs", DataTable)
        table.move_cursor(row=0)

        def panels() -> dict[str | None, int | None]:
            return {p.id: p.run_id for p in app.screen.query(RunPanel)}
        await wait_for(pilot, lambda: panels() == {"panel-a": first.run_id,
                                                   "panel-b": second.run_id})
        table.move_cursor(row=1)
        await wait_for(pilot, lambda: panels()["panel-a"] == second.run_id)
        await pilot.press("x")  # stops the highlighted (newest) run
        await wait_for(pilot, lambda: not second.active, timeout=8)
        assert second.state == "stopped" and first.active
        assert second.summary is not None and second.summary.requests  # partial figures kept
        assert "stopped" in str(table.get_row_at(1)[2])   # the state column
        # SIGHUP (the ssh session went away) stops the remaining probe and exits
        os.kill(os.getpid(), signal.SIGHUP)
        await wait_for(pilot, lambda: app.return_code is not None, timeout=8)
    assert app.probes.active() == []
    # each run was a process of its own: stopped, reaped (issue 20)
    assert not first.process_alive and first.state == "stopped"
    assert first.pid is not None and not psutil.pid_exists(first.pid)


def confirmation(app) -> str | None:
    """The confirmation dialog's text once it is up with its body mounted (the screen is
    pushed before its widgets are: beside two busy loops a query in between found no body)."""
    if not isinstance(app.screen, ConfirmScreen):
        return None
    found = app.screen.query("#confirm-body")
    return str(found.first(Static).render()) if found else None


async def test_confirmation_refused_then_accepted(tmp_path):
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        # 60 s, stopped once measuring: a run's target set-up (writing and syncing its 64 MiB
        # file) is bounded by the run's duration, and beside two busy loops and others' disk
        # work a 1 s run found 'no answer after 2 s', a 4 s one after 4 s (0.2-1.8 s at load 10),
        # and a 15 s run was done before its first figures came
        await start_probe(app, pilot, "io", str(tmp_path), seconds="60", write=True)
        await wait_for(pilot, lambda: confirmation(app))
        body = confirmation(app)
        assert body and str(tmp_path) in body and "60 s" in body  # names the target and the bound
        await pilot.press("n")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")
        assert app.probes.runs == []
        await pilot.press("s")
        await wait_for(pilot, lambda: confirmation(app))
        await pilot.press("y")
        await wait_for(pilot, lambda: app.probes.runs and (app.probes.runs[0].last is not None
                                                           or not app.probes.runs[0].active),
                       timeout=70)
        run = app.probes.runs[0]
        assert run.last is not None and run.last.ops > 0, (run.state, run.error)
        await pilot.press("x")
        await wait_for(pilot, lambda: not run.active)
        assert run.state == "stopped", run.error
        assert run.request.write
    assert list(tmp_path.iterdir()) == []  # the private file is gone


async def test_memcached_probe_against_real_server(memcached):
    server = memcached()
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await start_probe(app, pilot, "memcached", f"{server.host}:{server.port}", seconds="1.5",
                          concurrency="4")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: app.probes.runs and not app.probes.runs[0].active, timeout=15)
        run = app.probes.runs[0]
        assert run.state == "done", run.error
        assert run.summary is not None and run.summary.requests > 100
    assert server.stats()["cmd_get"] > 100


async def test_run_row_shows_whole_figures_and_a_failed_run_says_why(tmp_path):
    """The ops column grows with the count (it was cut to the header's 3 cells: 368040 read
    as "368"), and a run that fails before its first interval says why in its panel, not only
    in a toast that is gone when someone looks."""
    target = tmp_path / "probe.bin"
    target.write_bytes(os.urandom(4 << 20))
    app = capture_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await start_probe(app, pilot, "io", str(target), seconds="2")
        await wait_for(pilot, lambda: app.probes.runs and not app.probes.runs[0].active, timeout=15)
        run = app.probes.runs[0]
        assert run.summary is not None
        ops = run.summary.requests
        assert run.state == "done" and ops >= 1000, (run.state, run.error)
        table = app.screen.query_one("#runs", DataTable)
        await wait_for(pilot, lambda: str(table.get_row_at(0)[4]) == str(ops))
        ops_column = table.columns[ColumnKey("ops")]
        assert ops_column.get_render_width(table) - 2 * table.cell_padding >= len(str(ops))

        missing = tmp_path / "no-such-file"
        start_run(app, ProbeRequest(ProbeKind.IO, str(missing), duration=2))
        await wait_for(pilot, lambda: len(app.probes.runs) == 2 and not app.probes.runs[1].active,
                       timeout=10)
        failed = app.probes.runs[1]
        assert failed.state == "failed" and failed.error
        chart = app.screen.query_one("#panel-a LatencyChart", LatencyChart)
        await wait_for(pilot, lambda: chart.placeholder == f"failed: {failed.error}")
        await pilot.pause()     # laid out and drawn with it
        shown = " ".join(chart.render_line(y).text.strip() for y in range(chart.size.height)).strip()
        # wrapped over the chart's lines, a long path broken where it must be
        assert shown.startswith("failed:") and "no such file" in shown
        assert "no-such-file" in shown.replace(" ", "")


async def test_escape_sequences_in_host_strings_never_reach_the_terminal(tmp_path):
    """A capture whose hostname carries an OSC title sequence (hostile or broken): the TUI
    shows it as \\xNN text, the way `report` does."""
    import shutil
    root = tmp_path / "root"
    shutil.copytree(fixture_root("kvm-virtio-guest"), root, symlinks=True)
    (root / "proc" / "sys" / "kernel" / "hostname").write_text("host\x1b]0;pwned\x07x\n")
    app = InspectorApp(HostRoot(str(root)), sampler=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.report is not None
                       and "pwned" in text_of(app, "#identity"))
        identity = text_of(app, "#identity")
        assert "host\\x1b]0;pwned\\x07x" in identity and "\x1b" not in identity
        assert app.report is not None and "\x1b" not in str(app.report.host.hostname)


async def test_a_host_without_findings_says_so_once_discovered():
    """The findings table before the first report says "collecting..."; a report with no
    findings must replace it with "no findings" (both are an empty list: the table kept
    "collecting..." forever on a healthy host)."""
    root = HostRoot(str(fixture_root("kvm-virtio-guest")))

    def clean(root):
        report = build_report(root)
        report.findings = []
        return report
    app = InspectorApp(root, collector=clean, sampler=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one("#findings", DataTable)
        await wait_for(pilot, lambda: app.report is not None
                       and "no findings" in str(table.get_row_at(0)[2]))


NO_C_LOOP = """
import importlib.abc, sys
class NoCLoop(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "inspector.probes.io._ioloop":
            raise ImportError("no C loop in this install")
sys.meta_path.insert(0, NoCLoop())
"""


async def test_io_run_panel_warns_only_when_requests_are_timed_in_python(tmp_path, monkeypatch):
    """With the probe's C loop built (the normal case) the run panel has no timing row; on an
    install without it (here: the probe's process cannot import it), the panel says the
    requests were timed in Python."""
    target = tmp_path / "probe.bin"
    target.write_bytes(os.urandom(4 << 20))

    async def panel_after_a_run(app, pilot, index: int) -> str:
        await start_probe(app, pilot, "io", str(target), seconds="1")
        await wait_for(pilot, lambda: len(app.probes.runs) > index
                       and not app.probes.runs[index].active, timeout=15)
        assert app.probes.runs[index].state == "done", app.probes.runs[index].error
        table = app.screen.query_one("#panel-a .run-table", Static)

        def shown() -> str:
            return "\n".join(table.render_line(y).text for y in range(table.size.height))
        # the panel shows the ended run (its state row) once it has drawn the final update
        await wait_for(pilot, lambda: re.search(r"state\s+done", shown()) is not None)
        return shown()

    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        shown = await panel_after_a_run(app, pilot, 0)
        assert "p99" in shown and "timing" not in shown
        # the run is a child process: it gets an interpreter where the C loop is missing
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(NO_C_LOOP)
        monkeypatch.setenv("PYTHONPATH", str(site))
        shown = await panel_after_a_run(app, pilot, 1)
        python_run = app.probes.runs[1]
        assert re.search(r"^ti\S*\s+Python$", shown, re.M), (shown, python_run.summary,
                                                           python_run._stderr)


# Defects of the TUI, each pinned by a pilot test: sysctls listed as NICs, class reprs as
# values, a failed flash controller missing from the tree, 80x24 (tab labels and truncated
# findings), hotkeys typed into the form, help noise, charts spilling over borders.


def plain(renderable, width: int = 100) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def static_text(app, selector: str, width: int = 100) -> str:
    """What a Static shows, as plain text (its content may be a Group or a Table)."""
    return plain(app.screen.query_one(selector, Static).content, width)


async def goto(app, pilot, key: str, name: str) -> None:
    await wait_for(pilot, lambda: app.report is not None)
    await pilot.press(key)
    await wait_for(pilot, lambda: type(app.screen).__name__ == name)
    await pilot.pause()     # the screen has handled its mount and the report's messages


async def test_b6_network_without_interfaces_lists_no_sysctl_as_nic():
    app = capture_app("flash-mixed")          # the root has no sys/class/net
    async with app.run_test(size=(120, 40)) as pilot:
        await goto(app, pilot, "4", "NetScreen")
        table = app.screen.query_one("#nic-table", DataTable)
        assert table.row_count == 1
        cell = str(table.get_row_at(0)[0])
        assert "no network interfaces visible in this root" in cell
        assert "net." not in cell
        body = static_text(app, "#net-body")
        assert "sysctls" in body               # shown apart, under their own label


def test_b7_nested_records_are_key_value_text_never_a_repr():
    from inspector.discover.block import QueueLimits
    q = QueueLimits(512, 4096, 4096, 0)
    assert "QueueLimits" not in str(fmt_value(q))
    assert "logical block size 512" in str(fmt_value(q))

    @dataclasses.dataclass
    class Dev:
        name: str
        queue: QueueLimits
    text = plain(detail_table(Dev("sda", q)))
    assert "QueueLimits" not in text and "physical block size: 4096" in text


async def test_b7_storage_detail_shows_queue_limits_readably():
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await goto(app, pilot, "2", "StorageScreen")
        table = app.screen.query_one("#device-table", DataTable)
        table.move_cursor(row=next(i for i in range(table.row_count)
                                   if str(table.get_row_at(i)[0]) == "vda"))

        def detail() -> str:
            return " ".join(static_text(app, "#device-detail").split())
        await wait_for(pilot, lambda: detail().startswith("vda"))
        assert "QueueLimits" not in detail() and "logical block 512" in detail()


async def test_c1_failed_flash_controller_without_block_device_is_in_the_table():
    app = capture_app("flash-mixed")
    async with app.run_test(size=(120, 40)) as pilot:
        await goto(app, pilot, "2", "StorageScreen")
        table = app.screen.query_one("#device-table", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        index = next(i for i, r in enumerate(rows) if r[0] == "fct1")
        assert "CRIT" in rows[index][4] and "failed" in rows[index][4], rows[index]
        table.move_cursor(row=index)
        await wait_for(pilot, lambda: static_text(app, "#device-detail").startswith("fct1"))
        detail = static_text(app, "#device-detail")
        assert "no block device" in detail and "DEVICE IS OFFLINE" in detail
        assert "card failed" in detail           # its findings


def _with_findings(name: str, extra: int, hostname: str | None = None):
    app = capture_app(name)
    report = _REPORTS[name]
    host = dataclasses.replace(report.host, hostname=hostname) if hostname else report.host
    more = [Finding(Level.WARN, f"disk{i}", f"synthetic finding {i}") for i in range(extra)]
    changed = dataclasses.replace(report, host=host, findings=list(report.findings) + more)
    app.collector = lambda root: changed
    return app, len(changed.findings)


async def test_c2_80x24_every_tab_and_a_truncated_findings_list_says_so():
    app, total = _with_findings("flash-mixed", 15, hostname="a-very-long-hostname.example.internal")
    async with app.run_test(size=(80, 24)) as pilot:
        more = app.screen.query_one("#findings-more", Static)
        await wait_for(pilot, lambda: app.report is not None
                       and "more findings below" in str(more.render()))
        tabs = text_of(app, "#tabbar")
        for label in ("1 Overview", "2 Storage", "3 Virt", "4 Net", "5 DNS", "6 Probes"):
            assert label in tabs, tabs
        assert more.display
        table = app.screen.query_one("#findings", DataTable)

        def below() -> str:     # what the line must say for the rows the table shows now
            return f"+{total - (table.scrollable_content_region.height - 1)} more findings below"
        # the count follows the table's layout a refresh later (it read +25 before +21 on a
        # loaded run): the line must come to say what the table shows
        await wait_for(pilot, lambda: below() in str(more.render()), timeout=10)
        # scrolling to the end: nothing left below
        table.move_cursor(row=total - 1)
        await wait_for(pilot, lambda: "above" in str(more.render()))
        assert "below" not in str(more.render())


async def test_d_hotkeys_typed_into_the_target_field_are_letters():
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await goto(app, pilot, "2", "StorageScreen")
        await pilot.press("down", "p")                    # the IO form, target focused
        await pilot.press("enter", "end", *"s2x6cS?q")    # edited: screen, probe, app keys
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")
        target = app.screen.query_one("#probe-target", Input)
        # the keys act in order: once the last is typed, none of them did anything else
        await wait_for(pilot, lambda: target.value.endswith("s2x6cS?q"))
        assert type(app.screen).__name__ == "ProbesScreen"
        assert app.probes.runs == [] and app.return_code is None
        # the palette opening the form from the Probes screen itself prefills it too
        app.open_probe_form("memcached")
        await wait_for(pilot, lambda: target.value == "127.0.0.1:11211" and target.has_focus)


async def test_d_help_lists_only_inspectors_keys():
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await goto(app, pilot, "2", "StorageScreen")
        rows = app.help_rows()
        descriptions = {d for _, d, _ in rows}
        assert {"Filter", "IO probe here", "Quit", "Probes"} <= descriptions
        assert not {"Cursor Up", "Scroll Home", "Toggle", "Focus Next"} & descriptions
        assert all(where != "Tree" for _, _, where in rows)
        quit_keys = next(k for k, d, _ in rows if d == "Quit")
        assert "q" in quit_keys and "^c" in quit_keys       # one row, both keys


@pytest.mark.parametrize("size", [(80, 24), (60, 20)], ids=["80x24", "60x20"])
async def test_d_charts_stay_inside_their_borders(size):
    app = capture_app()
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        for key in "23456":
            await pilot.press(key)
            await wait_for(pilot, lambda: app.screen.query(LiveChart) or app.screen.query(RunChart))
            screen = app.screen
            widgets = (list(screen.query(LiveChart)) + list(screen.query(RunChart))
                       + list(screen.query(LatencyHistogram)))
            assert widgets
            for widget in widgets:
                if isinstance(widget, LiveChart):
                    widget.extend([(i % 7 + 1.0, i % 5 * 3.0, 40.0) for i in range(400)])
                elif isinstance(widget, LatencyChart):     # the Probes screen's run charts
                    widget.show([(i % 7 + 1) * 1e4 for i in range(400)],
                                [(i % 5 + 1) * 3e5 for i in range(400)], [4e8] * 400,
                                [i % 9 == 0 for i in range(400)])
                elif isinstance(widget, RateChart):
                    widget.show([float(i % 11) * 1e3 for i in range(400)], [False] * 400)
            await pilot.pause()     # the data given above laid out and drawn
            for widget in widgets:
                if not widget.display or widget.region.area == 0:
                    continue
                # the whole widget, borders included, lies inside every container up to the
                # screen (a scrolled pane shows it whole, just further down: stop there)
                for ancestor in widget.ancestors:
                    if not hasattr(ancestor, "region"):
                        break
                    if ancestor is not screen and ancestor.styles.overflow_y in ("auto", "scroll"):
                        break
                    assert ancestor.region.contains_region(widget.region), \
                        (key, widget, widget.region, ancestor, ancestor.region)
                    if ancestor is screen:
                        break
                if isinstance(widget, (LiveChart, RunChart)):
                    w = widget.content_size.width
                    for y in range(widget.content_size.height):
                        assert widget.render_line(y).cell_length == w
