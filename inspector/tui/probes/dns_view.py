"""The DNS screen's probe part: the latest DNS run, what named its servers, each server's
latest answer, the CLI's verdicts with their levels and glibc's failover predictions, and a
chart with one line per nameserver.

The screen's header analyses the host's resolver configuration; a run may have probed another
file or addresses given by hand, so every line here names the run's own source.
"""
from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from inspector.probes.base import Interval, ProbeKind
from inspector.tui.probes.figures import STATE_STYLES
from inspector.tui.probes.runs import LiveRun
from inspector.widgets.chart import LiveChart

LEVEL_STYLES = {"crit": "bold red", "warn": "bold yellow", "unknown": "magenta", "ok": "green"}


def dns_runs(runs: list[LiveRun]) -> list[LiveRun]:
    return [r for r in runs if r.request.kind == ProbeKind.DNS]


def per_server_ms(interval: Interval) -> dict[str, float | None]:
    """Each server's latency in a round; None for one that did not answer (a refusal is quick
    and no answer: only answers have a latency)."""
    if interval.dns is None:
        return {}
    return {s.server: s.latency_ms if s.kind == "answered" else None
            for s in interval.dns.servers}


class DnsProbeView(Vertical):
    """Shows one run: the latest DNS run of the session, or nothing yet."""
    DEFAULT_CSS = "DnsProbeView { height: auto; } #dns-probe-verdicts { height: auto; }"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.run: LiveRun | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="dns-probe-line")      # wraps: a long path and every server
        yield Static(id="dns-probe-verdicts")
        yield LiveChart("per-server latency (ms)", series=("p50", "p99", "max"), unit="ms",
                        id="dns-chart", placeholder="start a DNS probe (p) to chart latency")

    def show(self, run: LiveRun | None) -> None:
        """Redraw everything from `run` (its bounded intervals)."""
        self.run = run
        chart = self.query_one("#dns-chart", LiveChart)
        chart.clear()
        if run is not None:
            for interval in run.intervals:
                self._chart(interval)
        self.show_state()

    def interval(self, run: LiveRun) -> None:
        """A new round of `run`; a run newer than the one shown replaces it."""
        if run is not self.run:
            self.show(run)
            return
        if run.last is not None:
            self._chart(run.last)
        self.show_state()

    def show_state(self) -> None:
        self.query_one("#dns-probe-line", Static).update(probe_line(self.run))
        self.query_one("#dns-probe-verdicts", Static).update(
            verdicts(self.run) if self.run is not None else "")

    def _chart(self, interval: Interval) -> None:
        chart = self.query_one("#dns-chart", LiveChart)
        servers = per_server_ms(interval)
        if not servers:
            chart.push(*[None if v is None else v / 1e6
                         for v in (interval.p50_ns, interval.p99_ns, interval.max_ns)])
            return
        if set(servers) - set(chart.series):
            chart.set_series(list(dict.fromkeys([*(s for s in chart.series if s in servers),
                                                 *servers])))
        chart.push(*[servers.get(name) for name in chart.series])


def source_of(run: LiveRun) -> str:
    """What named the run's servers: the summary's own word once it has ended, else the
    request's target."""
    if run.summary is not None and run.summary.dns is not None and run.summary.dns.source:
        return run.summary.dns.source
    return run.request.target or "/etc/resolv.conf"


def probe_line(run: LiveRun | None) -> Text:
    if run is None:
        return Text("probe  no DNS probe run yet (p starts one)", style="grey62")
    text = Text(f"probe  #{run.run_id} ", style="bold")
    text.append(str(run.state), style=STATE_STYLES.get(run.state, "bold"))
    text.append(f"  on {source_of(run)}", style="cyan")
    # a server that failed is an error with its kind (refused, timeout, lame, servfail),
    # never a latency: a refusal comes back in 0.4 ms and is no answer
    last = run.last
    for server in (last.dns.servers if last is not None and last.dns is not None else []):
        if server.kind != "answered":
            text.append(f"  {server.server} {server.kind}", style="bold red")
        elif server.latency_ms is not None:
            text.append(f"  {server.server} {server.latency_ms:.1f} ms")
        else:
            text.append(f"  {server.server} -")
    if run.error:
        text.append(f"  {run.error}", style="red")
    return text


def verdicts(run: LiveRun) -> RenderableType:
    """The CLI's verdicts (`probe dns`'s findings, worst first) and glibc's predicted lookup
    times, once the run has ended; folded, never cut ("fails after 10 s" keeps its unit)."""
    parts: list[RenderableType] = []
    for finding in run.verdicts:
        level = finding.get("level", "unknown")
        line = Text(f"{level.upper():<5} ", style=LEVEL_STYLES.get(level, "bold"),
                    overflow="fold")
        line.append(finding.get("message", ""), style="default")
        parts.append(line)
    dns = run.summary.dns if run.summary is not None else None
    if dns is not None and dns.predictions:
        table = Table(box=None, show_header=True, pad_edge=False, header_style="grey62",
                      title="predicted lookup time (glibc)", title_justify="left",
                      title_style="bold")
        table.add_column("case", no_wrap=True)
        table.add_column("lookup", overflow="fold")
        for case, outcome in dns.predictions.items():
            table.add_row(case, outcome)
        parts.append(table)
    return Group(*parts)
