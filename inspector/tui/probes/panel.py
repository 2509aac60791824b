"""RunPanel: one run's charts, figures and histogram on the Probes screen.

The panel is a view of the run it is attached to and of nothing else: every repaint (a new
interval, the run's end, another run attached, a resize) redraws charts, figures and histogram
from that run's bounded intervals (tui.probes.runs.LiveRun), so a panel titled with run #3 can
never keep run #2's histogram, and a run that has ended shows its final state and figures at
once.
"""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from inspector.tui.probes.figures import interval_latency, state_text, whole_run
from inspector.tui.probes.runs import LiveRun, RunState
from inspector.widgets.histogram import LatencyHistogram
from inspector.widgets.probe_chart import LatencyChart, RateChart, format_rate


class RunPanel(Vertical):
    """Latency chart (log), ops/s chart, figures (last interval | whole run), histogram."""

    def __init__(self, title: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.title = title
        self.run: LiveRun | None = None

    @property
    def run_id(self) -> int | None:
        return self.run.run_id if self.run is not None else None

    def compose(self) -> ComposeResult:
        yield LatencyChart(self.title, classes="run-latency")
        yield RateChart("ops/s per interval", classes="run-rate")
        with Horizontal(classes="run-stats"):
            yield Static(classes="run-table")
            yield LatencyHistogram("histogram", rows=None, classes="run-hist")

    def on_mount(self) -> None:
        self.repaint()

    def on_resize(self) -> None:
        self.repaint()

    def attach(self, run: LiveRun | None) -> None:
        """Show `run` (None: nothing): everything the panel showed before is gone."""
        self.run = run
        self.repaint()

    # the screen's hook: anything that changes the run repaints the whole panel
    def finished(self, run: LiveRun) -> None:
        if run is self.run:
            self.repaint()

    def repaint(self) -> None:
        if not self.is_mounted or not self.size.area:
            return      # not laid out yet: on_resize paints it once it has a size
        run = self.run
        latency = self.query_one(LatencyChart)
        rate = self.query_one(RateChart)
        hist = self.query_one(LatencyHistogram)
        table = self.query_one(".run-table", Static)
        latency.border_title = f"{self.title}: {run.title}" if run else self.title
        if run is None:
            latency.show_placeholder("no run selected")
            rate.show_placeholder("")
            table.update("", layout=False)
            hist.border_title = "histogram"
            hist.clear("")
            return
        intervals = list(run.intervals)
        if intervals:
            late = [t > 0 for t in run.late]
            latency.show([i.p50_ns for i in intervals], [i.p99_ns for i in intervals],
                         [i.max_ns for i in intervals], late, run.center)
            rate.show([i.ops_per_s for i in intervals], late)
        else:
            latency.show_placeholder(waiting_text(run))
            rate.show_placeholder("")
        table.update(figures_table(run), layout=False)
        if run.summary is not None and run.summary.histogram:
            hist.border_title = "histogram: whole run"
            hist.update_buckets(run.summary.histogram)
        elif run.histogram.total > 0:
            hist.border_title = "histogram ≈ live" if run.active else "histogram ≈ (intervals)"
            hist.update_buckets(run.histogram.buckets())
        else:
            hist.border_title = "histogram"
            hist.clear("no samples yet" if run.active else waiting_text(run))


def waiting_text(run: LiveRun) -> str:
    if run.state == RunState.FAILED:
        return f"failed: {run.error or 'no reason given'}"
    if run.active:
        return "waiting for the first interval..."
    return f"{run.state} before the first interval"


def figures_table(run: LiveRun) -> Table | Group:
    """Two columns, each naming its scope: the last interval, the whole run (≈ estimated from
    the intervals while the run goes; exact once it has ended)."""
    last, total = run.last, whole_run(run)
    table = Table(box=None, show_header=True, pad_edge=False, header_style="grey62",
                  padding=(0, 0, 0, 1))
    table.add_column("", style="bold cyan", no_wrap=True)
    table.add_column("last", justify="right", no_wrap=True)
    table.add_column("run", justify="right", no_wrap=True)
    elapsed = f" {total.seconds:.1f}s" if total.seconds is not None else ""
    table.add_row("state", "", state_text(run).append(elapsed, style="grey62"))
    table.add_row("ops", str(last.ops) if last else "-",
                  str(total.ops) if total.ops is not None else "-")
    table.add_row("ops/s", format_rate(last.ops_per_s) if last else "-",
                  format_rate(total.ops_per_s))
    table.add_row(run.center, interval_latency(last, "p50"), total.latency("p50"))
    table.add_row("p99", interval_latency(last, "p99"), total.latency("p99"))
    table.add_row("max", interval_latency(last, "max"), total.latency("max"))
    errors = run.errors
    if errors or run.error:
        table.add_row(Text("errors", style="bold red"), "", Text(str(errors), style="bold red"))
    if run.late_count:
        table.add_row(Text("late", style="magenta"), "",
                      Text(f"{run.late_count} ≤{run.late_max:.1f}s", style="magenta"))
    loop = run.summary.io.loop if run.summary and run.summary.io else (
        last.io.loop if last and last.io else None)
    if loop == "python":
        # the IO probe's C loop is not built: requests are timed in Python, where the probe
        # process's other threads add to the latencies (README: the IO probe's C loop)
        table.add_row(Text("timing", style="yellow"), "", Text("Python", style="yellow"))
    if run.error:       # what failed, with the reason (a failed run's is in its chart too)
        return Group(table, Text(run.error, style="red", overflow="fold"))
    return table
