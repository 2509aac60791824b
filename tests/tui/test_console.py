"""The incident console in a pilot: keys reach every panel, OK findings fold, a timed-out
discovery says so where the findings go, Storage hides empty devices until `a`, lists md
arrays known only from /proc/mdstat, and changes live cells in place; Network selects the
first physical NIC that is up."""
from __future__ import annotations

import importlib.util
import io
import threading

from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from conftest import FIXTURES, TESTS, fixture_root
from frozen import FrozenSampler, frozen_history, view_from_report
from inspector.health.live.session import hypervisor_of
from inspector.model import Finding, Level, Report
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot
from inspector.tui.app import InspectorApp
from inspector.tui.flow_canvas import FlowCanvas
from inspector.tui.live import LiveFeed
from inspector.tui.screen_help import HelpScreen, TextScreen
from inspector.tui.screen_storage import StorageScreen
from inspector.tui.screens_detail import NetScreen
from test_pilot import capture_app, current, wait_for

_REPORTS: dict = {}


def live_app(name: str) -> InspectorApp:
    if name not in _REPORTS:
        _REPORTS[name] = build_report(HostRoot(str(fixture_root(name))))
    report = _REPORTS[name]
    app = InspectorApp(HostRoot(str(fixture_root(name))), collector=lambda r: report,
                       sampler=FrozenSampler(None), live_interval=3600)
    app.sampler = FrozenSampler(frozen_history(report, app.trends))
    return app


def discovered(app: InspectorApp) -> Report:
    """The app's report, which the test has waited for."""
    assert app.report is not None
    return app.report


async def ready(app, pilot) -> None:
    await wait_for(pilot, lambda: app.report is not None and app.live_sample is not None)
    await pilot.pause()


def rows(table: DataTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_keys_reach_every_panel_and_help_lists_them():
    app = live_app("kvm-virtio-guest")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        described = {d for _, d, _ in app.help_rows()}
        assert {"OK findings", "Virt evidence", "Disks", "NICs", "Tasks", "Finding details",
                "Storage", "Network", "Refresh", "Help", "Quit"} <= described
        await pilot.press("d")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "StorageScreen")
        await pilot.press("1", "n")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "NetScreen")
        await pilot.press("1", "t")
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen))
        await pilot.press("escape", "e")
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen))
        await pilot.press("escape", "question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_ok_findings_fold_and_enter_opens_a_finding():
    # flash-mixed's own findings are WARN, CRIT and UNKNOWN: two OK ones are added to fold
    app = capture_app("flash-mixed")
    report = build_report(HostRoot(str(fixture_root("flash-mixed"))))
    report.findings += [Finding(Level.OK, "md0", "in sync"), Finding(Level.OK, "eth0", "up")]
    app.collector = lambda root: report
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        table = app.screen.query_one("#findings", DataTable)
        oks = [f for f in discovered(app).findings if f.level.label == "ok"]
        assert len(oks) == 2
        # the table is filled from the report: the fold's row comes last
        await wait_for(pilot, lambda: f"{len(oks)} OK finding" in rows(table)[-1][2])
        assert not any(r[0].strip() == "OK" for r in rows(table))
        await pilot.press("o")
        await wait_for(pilot, lambda: table.row_count == len(discovered(app).findings))
        table.move_cursor(row=0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen))


async def test_a_timed_out_discovery_says_so_where_the_findings_go():
    release = threading.Event()

    def hung(root):
        release.wait(30)
        return build_report(root)
    app = InspectorApp(HostRoot(str(fixture_root("kvm-virtio-guest"))), collector=hung,
                       collect_timeout=1.0, sampler=False)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.screen.query_one("#findings", DataTable)
            await wait_for(pilot, lambda: "timed out after 1 s" in rows(table)[0][2])
            assert "collecting" not in rows(table)[0][2]
    finally:
        release.set()


async def test_storage_hides_empty_devices_until_a(tmp_path):
    import shutil
    root = tmp_path / "root"
    shutil.copytree(fixture_root("kvm-virtio-guest"), root, symlinks=True)
    loop = root / "sys" / "block" / "loop0"
    (loop / "queue").mkdir(parents=True)
    (loop / "size").write_text("0\n")
    (loop / "dev").write_text("7:0\n")
    app = InspectorApp(HostRoot(str(root)), sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        assert "loop0" in discovered(app).section("storage").devices
        await pilot.press("2")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "StorageScreen")
        await pilot.pause()
        table = app.screen.query_one("#device-table", DataTable)
        assert not any(r[0] == "loop0" for r in rows(table))
        assert "1 empty device" in str(app.screen.query_one("#storage-note").render())
        await pilot.press("a")
        await wait_for(pilot, lambda: any(r[0] == "loop0" for r in rows(table)))


async def test_storage_lists_arrays_known_only_from_mdstat(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "mdstat").write_text((FIXTURES / "mdstat" / "raid1-recovering.mdstat").read_text())
    app = InspectorApp(HostRoot(str(tmp_path)), sampler=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.report is not None)
        arrays = list(discovered(app).section("storage").md)
        assert arrays
        await pilot.press("2")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "StorageScreen")
        await pilot.pause()
        shown = rows(app.screen.query_one("#device-table", DataTable))
        for name in arrays:
            row = next(r for r in shown if r[0] == name)
            assert "degraded" in row[4] or "WARN" in row[4] or "CRIT" in row[4], row


async def test_storage_live_cells_change_in_place():
    app = live_app("kvm-virtio-guest")
    async with app.run_test(size=(200, 50)) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "StorageScreen")
        await pilot.pause()
        table = app.screen.query_one("#device-table", DataTable)
        vda = next(i for i, r in enumerate(rows(table)) if r[0] == "vda")
        assert rows(table)[vda][2].strip() == "40G" and rows(table)[vda][8].endswith("%")
        before = rows(table)[vda][8]
        row_key = table.coordinate_to_cell_key(Coordinate(vda, 0)).row_key
        busier = view_from_report(discovered(app), 1.4)
        app.trends.push(busier)
        app.live_sample = busier
        current(app, StorageScreen).show_live(busier, None)
        await pilot.pause()
        after = rows(table)[vda][8]
        assert after != before and after == f"{busier.disks[[d.name for d in busier.disks].index('vda')].util:.1f}%"
        assert table.coordinate_to_cell_key(Coordinate(vda, 0)).row_key == row_key   # same row, no rebuild


async def test_network_selects_the_first_physical_nic_that_is_up():
    app = live_app("xen-pv-guest")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("4")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "NetScreen")
        await pilot.pause()
        assert current(app, NetScreen)._selected == "eth0"              # not lo, listed first
        table = app.screen.query_one("#nic-table", DataTable)
        assert [r[0] for r in rows(table)].count("eth0") == 1
        assert rows(table)[table.cursor_row][0] == "eth0"
        eth0 = rows(table)[table.cursor_row]
        assert "TSO GSO GRO" in eth0[-1]
        detail = app.screen.query_one("#nic-offloads", Static).content
        from rich.console import Console
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(detail)
        assert "tcp-segmentation-offload: on" in console.export_text()


async def test_a_hung_live_sample_shows_timed_out_in_the_panels():
    release = threading.Event()

    class Hung:
        def sample(self):
            release.wait(30)

    app = InspectorApp(HostRoot(str(fixture_root("kvm-virtio-guest"))), sampler=Hung(),
                       live_interval=0.5)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            def shown() -> str:
                return app.screen.query_one("#dashboard", FlowCanvas).text()
            await wait_for(pilot, lambda: "live sampling timed out after 1 s" in shown())
            assert "waiting" not in shown()
    finally:
        release.set()


def live_host_module():
    """tests/unit/live_host.py: a tree whose counter files a test advances (on its own
    clock), read by the real sampler."""
    spec = importlib.util.spec_from_file_location("live_host", TESTS / "unit" / "live_host.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_steal_finding_names_the_vm_layer_discovery_found(tmp_path):
    """Discovery's report on a KVM guest reaches the live rules: 35 % steal reads 'stolen by
    kvm', not by 'the hypervisor (layer not known to this view)'."""
    report = build_report(HostRoot(str(fixture_root("kvm-virtio-guest"))))
    layer = hypervisor_of(report.section("virt"))
    assert layer == "kvm"
    host = live_host_module().LiveHost(tmp_path / "root")
    read_counters = host.session().read

    def stolen_second():         # each sample one more second of 35 % steal
        host.cpu_spend(user=40, steal=35)
        host.flush()
        host.clock += 1.0
        return read_counters()
    app = InspectorApp(HostRoot(str(fixture_root("kvm-virtio-guest"))),
                       collector=lambda r: report, sampler=LiveFeed(stolen_second),
                       live_interval=0.05)

    def steal_message() -> str:
        view = app.live_sample
        found = [f.message for f in (view.findings if view else []) if f.code == "live.cpu.steal"]
        return found[0] if found and app.report is not None else ""
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "stolen by kvm" in steal_message())

        def shown() -> str:
            return " ".join(c for row in rows(app.screen.query_one("#findings", DataTable))
                            for c in row)
        await wait_for(pilot, lambda: "35% of CPU time stolen by kvm" in shown())
