"""The Probes screen's runs table keeps a run's target readable at every width: a host:port
keeps its port and loses the middle of the host, a path keeps its file name, and the table
never needs more columns than the terminal has (inspector.tui.probes.run_columns)."""
from __future__ import annotations

import pytest
from textual.widgets import DataTable

from inspector.probes.base import ProbeKind
from inspector.tui.probes.run_columns import (
    columns_for,
    probe_cell,
    probe_room,
    short_target,
)
from inspector.tui.probes.runs import ProbeRequest
from memcached_server import free_port
from test_pilot import capture_app, start_run, wait_for


@pytest.mark.parametrize("target,room,shown", [
    ("127.0.0.1:11211", 20, "127.0.0.1:11211"),
    ("127.0.0.1:11211", 14, "127.…0.1:11211"),
    ("cache-01.prod.example.com:11211", 20, "cache-0…le.com:11211"),
    ("/var/lib/mysql/data/probe.bin", 20, "/var/…data/probe.bin"),
    ("/tmp", 3, "/…p"),
    ("resolv.conf", 8, "reso…onf"),
])
def test_a_target_keeps_its_port_or_file_name(target, room, shown):
    assert short_target(target, room) == shown
    assert len(shown) <= room


def test_at_80_columns_a_memcached_target_keeps_its_host_ends_and_port():
    cell = probe_cell("memcached", "127.0.0.1:11211", probe_room(80))
    assert cell.startswith("memcached 127.") and cell.endswith("0.1:11211"), cell
    # the whole run's max goes below 100 columns; the other figures stay
    assert [k for k, _ in columns_for(80)] == ["run", "probe", "state", "err", "ops", "ops/s",
                                               "p50", "p99"]
    assert dict(columns_for(120))["p50"] == "run p50"


@pytest.mark.parametrize("width", [60, 80, 99, 100, 120, 200])
def test_the_columns_at_their_widest_fit_the_width(width):
    assert probe_room(width) >= 12
    if width >= 80:
        widest = {"run": 3, "state": 8, "err": 3, "ops": 7, "ops/s": 5, "p50": 6, "p99": 6,
                  "max": 6, "probe": probe_room(width)}
        used = sum(max(len(label), widest[key]) + 2 for key, label in columns_for(width))
        assert used + 2 <= width, (width, used)


async def test_the_runs_table_at_80_columns_then_120():
    """A memcached run on a port where nothing listens (it fails at once): at 80x24 its
    row says `memcached 127.…0.1:PORT` and the table fits the screen; widened to 120 it is
    laid out again with the whole target and the run max column."""
    port = free_port()
    target = f"127.0.0.1:{port}"
    app = capture_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")
        run = start_run(app, ProbeRequest(ProbeKind.MEMCACHED, target, duration=1))
        await wait_for(pilot, lambda: not run.active)
        table = app.screen.query_one("#runs", DataTable)
        await wait_for(pilot, lambda: "failed" in str(table.get_row_at(0)[2]))
        probe = str(table.get_row_at(0)[1])
        assert probe.startswith("memcached 127.") and probe.endswith(f":{port}"), probe
        assert "…" in probe
        assert table.virtual_size.width <= table.size.width, (table.virtual_size, table.size)
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: "max" in table.columns)
        await wait_for(pilot, lambda: str(table.get_row_at(0)[1]) == f"memcached {target}")
        assert "failed" in str(table.get_row_at(0)[2])
