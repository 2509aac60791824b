"""QA defects of the TUI, each pinned by a pilot test: B6 (sysctls listed as NICs), B7 (class
reprs as values), C1 (failed flash controller missing from the tree), C2 (80x24: tab labels and
truncated findings), D (hotkeys typed into the form, help noise, charts spilling over borders)."""
from __future__ import annotations

import dataclasses

import pytest
from rich.console import Console
from textual.widgets import DataTable, Input, Static

from inspector.model import Finding, Level
from inspector.tui.modelview import detail_table, fmt_value
from inspector.widgets.chart import LiveChart
from inspector.widgets.histogram import LatencyHistogram
from inspector.widgets.probe_chart import LatencyChart, RateChart, RunChart
from test_pilot import _REPORTS, capture_app, text_of, wait_for  # noqa: F401


def plain(renderable, width: int = 100) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


def static_text(app, selector: str, width: int = 100) -> str:
    """What a Static shows, as plain text (its content may be a Group or a Table)."""
    return plain(app.screen.query_one(selector, Static).content, width)


async def goto(app, pilot, key: str, name: str) -> None:
    await wait_for(pilot, lambda: app.report is not None)
    await pilot.press(key)
    await wait_for(pilot, lambda: type(app.screen).__name__ == name)
    await pilot.pause()


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
        await pilot.pause(0.2)
        detail = " ".join(static_text(app, "#device-detail").split())
        assert "QueueLimits" not in detail and "logical block 512" in detail


async def test_c1_failed_flash_controller_without_block_device_is_in_the_table():
    app = capture_app("flash-mixed")
    async with app.run_test(size=(120, 40)) as pilot:
        await goto(app, pilot, "2", "StorageScreen")
        table = app.screen.query_one("#device-table", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        index = next(i for i, r in enumerate(rows) if r[0] == "fct1")
        assert "CRIT" in rows[index][4] and "failed" in rows[index][4], rows[index]
        table.move_cursor(row=index)
        await pilot.pause(0.2)
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
        await wait_for(pilot, lambda: app.report is not None)
        await pilot.pause(0.5)
        tabs = text_of(app, "#tabbar")
        for label in ("1 Overview", "2 Storage", "3 Virt", "4 Net", "5 DNS", "6 Probes"):
            assert label in tabs, tabs
        more = app.screen.query_one("#findings-more", Static)
        assert more.display
        table = app.screen.query_one("#findings", DataTable)
        shown = table.scrollable_content_region.height - 1
        assert f"+{total - shown} more findings below" in str(more.render())
        # scrolling to the end: nothing left below
        table.move_cursor(row=total - 1)
        await pilot.pause(0.2)
        assert "below" not in str(more.render()) and "above" in str(more.render())


async def test_d_hotkeys_typed_into_the_target_field_are_letters():
    app = capture_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await goto(app, pilot, "2", "StorageScreen")
        await pilot.press("down", "p")                    # the IO form, target focused
        await pilot.press("end", *"s2x6cS?q")             # screen, probe and app hotkeys
        await pilot.pause(0.3)
        assert type(app.screen).__name__ == "ProbesScreen"
        target = app.screen.query_one("#probe-target", Input)
        assert target.value.endswith("s2x6cS?q")
        assert app.probes.runs == [] and app.return_code is None
        # the palette opening the form from the Probes screen itself prefills it too
        app.open_probe_form("memcached")
        await pilot.pause(0.2)
        assert target.value == "127.0.0.1:11211" and target.has_focus


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
            await pilot.pause()
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
