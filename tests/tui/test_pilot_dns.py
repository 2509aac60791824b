"""The DNS probe from the TUI against real loopback responders: the Probes screen runs it, the
DNS screen charts it (one line per nameserver), shows each server's latest latency, names
what each run probed (a resolv.conf, or addresses), and shows the CLI's verdicts with their
levels and glibc's failover predictions."""
from __future__ import annotations

import re

from textual.widgets import Input, Static

from dns_responders import Responder
from inspector.probes.base import ProbeKind
from inspector.tui.app import InspectorApp
from inspector.tui.probes.runs import ProbeRequest
from inspector.widgets.chart import LiveChart
from slowness import factor
from test_pilot import capture_app, start_probe, start_run, wait_for


def shown(app: InspectorApp, selector: str) -> str:
    widget = app.screen.query_one(selector, Static)
    return "\n".join(widget.render_line(y).text.rstrip() for y in range(widget.size.height))


def one_line(app: InspectorApp, selector: str) -> str:
    """What a Static shows with its folds undone (pytest's paths are long)."""
    return " ".join(shown(app, selector).split())


async def test_dns_probe_charts_per_server_latency():
    fast = Responder("127.0.0.1", 0, "ok")
    slow = Responder("127.0.0.2", 0, "ok", delay=0.02)
    try:
        app = capture_app()
        async with app.run_test(size=(120, 40)) as pilot:
            # 3 rounds a second apart within 3.9 s: with 3 s the last round had what the two
            # before left of its second, and beside two busy loops it missed the deadline,
            # which ends a run 'stopped (partial rounds)' (run 4 of 5)
            await start_probe(app, pilot, "dns", f"{fast.server},{slow.server}", seconds="3.9")
            await wait_for(pilot, lambda: app.probes.runs and app.probes.runs[0].last)
            await pilot.press("5")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "DnsScreen")
            run = app.probes.runs[0]
            await wait_for(pilot, lambda: not run.active, timeout=15)
            # its own deadline may cut the last round on a slow machine (beside two busy
            # loops): the complete rounds are charted all the same; on a quiet one it is done
            assert run.state == "done" or (factor() > 1.5 and run.state == "errors"
                                           and (run.error or "").startswith("deadline of")), \
                (run.state, run.error, factor())

            def probe_line() -> str:
                return str(app.screen.query_one("#dns-probe-line", Static).render())
            # each server's latest latency, once the screen has the run's end
            await wait_for(pilot, lambda: all(re.search(re.escape(server) + r" \d+\.\d ms",
                                                        probe_line())
                                              for server in (fast.server, slow.server)))
            line = probe_line()
            # what the run probed: the addresses given, not the host's resolv.conf
            assert f"on nameservers {fast.server}, {slow.server}" in line, line
            chart = app.screen.query_one("#dns-chart", LiveChart)
            assert chart.points >= 2
            # one line per nameserver, in the configured order; the slow one 20 ms above
            first = run.intervals[0].dns
            assert first is not None            # a DNS run's intervals carry their servers
            assert chart.series == tuple(s.server for s in first.servers)
            assert len(chart.series) == 2
            fast_ms, slow_ms = chart.latest()
            assert fast_ms is not None and slow_ms is not None     # both answered
            assert slow_ms >= 20
            # fast below slow at the run's quietest: one interval's figures are the machine's
            # scheduling too (beside two busy loops the fast server's latest was 258 ms, the
            # slow one's 246 ms)
            quickest = {server: min(s.latency_ms for i in run.intervals if i.dns is not None
                                    for s in i.dns.servers
                                    if s.server == server and s.latency_ms is not None)
                        for server in chart.series}
            assert quickest[fast.server] < quickest[slow.server], quickest
            # the slow server's 20 ms delay shows as the slowest latency of the run
            assert run.summary is not None and run.summary.latency.max_ns is not None
            assert run.summary.latency.max_ns >= 20e6
    finally:
        fast.close()
        slow.close()


async def test_the_dns_screen_names_each_runs_source_its_verdicts_and_predictions(tmp_path):
    """A run on a resolv.conf whose only nameserver refuses (nothing listens on 127.0.0.9:53):
    the screen names that file, says CRIT as `probe dns` does, and predicts the lookup if the
    server refused or went silent. The next run, on addresses, replaces all of it."""
    conf = tmp_path / "resolv.conf"
    conf.write_text("nameserver 127.0.0.9\noptions timeout:1 attempts:1\n")
    ok = Responder("127.0.0.1", 0, "ok")
    try:
        app = capture_app()
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press("5")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "DnsScreen")
            assert "no DNS probe run yet" in shown(app, "#dns-probe-line")
            # p opens the form on the file this screen analyses, not the last one probed
            await pilot.press("p")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")
            target = app.screen.query_one("#probe-target", Input)
            await wait_for(pilot, lambda: target.has_focus)
            assert target.value == "/etc/resolv.conf"
            first = start_run(app, ProbeRequest(ProbeKind.DNS, str(conf), 2, name="probe.test"))
            await wait_for(pilot, lambda: not first.active, timeout=15)
            await pilot.press("5")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "DnsScreen")
            # one line, wherever the screen folded it (the file's path is pytest's, long); the
            # fold shows once the line is laid out at its new height ('probe #4 failed on'
            # before, beside two busy loops)
            await wait_for(pilot, lambda: all(part in one_line(app, "#dns-probe-line") for part in
                                              (f"#{first.run_id}", f"on {conf}",
                                               "127.0.0.9:53 refused")))
            # the verdicts come with the run's end, and show once laid out at their height
            await wait_for(pilot, lambda: "predicted lookup time" in shown(app, "#dns-probe-verdicts"))
            verdicts = shown(app, "#dns-probe-verdicts")
            assert re.search(r"^CRIT\s+nameserver 127\.0\.0\.9:53 refused now", verdicts,
                             re.M), verdicts
            assert re.search(r"^WARN\s+127\.0\.0\.9:53 is the only nameserver", verdicts,
                             re.M), verdicts
            assert "predicted lookup time (glibc)" in verdicts
            assert re.search(r"if 127\.0\.0\.9:53 is blackholed\s+\S", verdicts), verdicts
            # a long verdict folds over lines: "fails after N s" keeps its unit at 100 columns
            assert not re.search(r"fails after \d+(\.\d+)?$", verdicts, re.M), verdicts

            await pilot.press("6")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "ProbesScreen")
            second = start_run(app, ProbeRequest(ProbeKind.DNS, ok.server, 1, name="probe.test"))
            await pilot.press("5")
            await wait_for(pilot, lambda: not second.active, timeout=15)
            await wait_for(pilot, lambda: all(part in one_line(app, "#dns-probe-line") for part in
                                              (f"#{second.run_id}", f"on nameservers {ok.server}")))
            assert str(conf) not in one_line(app, "#dns-probe-line")
            await wait_for(pilot, lambda: f"if {ok.server} refuses" in shown(app, "#dns-probe-verdicts"))
            verdicts = shown(app, "#dns-probe-verdicts")
            assert "CRIT" not in verdicts and f"if {ok.server} refuses" in verdicts, verdicts
    finally:
        ok.close()
