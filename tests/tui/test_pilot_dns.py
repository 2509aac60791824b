"""The DNS probe from the TUI against real loopback responders: the Probes screen runs it, the
DNS screen charts it (one line per nameserver) and shows each server's latest latency."""
from __future__ import annotations

import re

from textual.widgets import Static

from dns_responders import Responder
from inspector.widgets.chart import LiveChart
from test_pilot import capture_app, start_probe, wait_for


async def test_dns_probe_charts_per_server_latency():
    fast = Responder("127.0.0.1", 0, "ok")
    slow = Responder("127.0.0.2", 0, "ok", delay=0.02)
    try:
        app = capture_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await start_probe(app, pilot, "dns", f"{fast.server},{slow.server}", seconds="3")
            await wait_for(pilot, lambda: app.probes.runs and app.probes.runs[0].last)
            await pilot.press("5")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "DnsScreen")
            run = app.probes.runs[0]
            await wait_for(pilot, lambda: not run.active, timeout=15)
            assert run.state == "done", run.error
            await pilot.pause()
            line = str(app.screen.query_one("#dns-probe-line", Static).render())
            for server in (fast.server, slow.server):  # each server's latest latency
                assert re.search(re.escape(server) + r" \d+\.\d ms", line), line
            chart = app.screen.query_one("#dns-chart", LiveChart)
            assert chart.points >= 2
            # one line per nameserver, in the configured order; the slow one 20 ms above
            per_server = run.history.servers[0]
            assert chart.series == tuple(per_server) and len(chart.series) == 2
            fast_ms, slow_ms = chart.latest()
            assert slow_ms >= 20 and fast_ms < slow_ms
            # the slow server's 20 ms delay shows as the slowest latency of each round
            assert run.last.extra.final and run.last.max >= 20e6
    finally:
        fast.close()
        slow.close()
