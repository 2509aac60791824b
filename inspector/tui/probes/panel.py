"""RunPanel: one run's charts, figures and histogram on the Probes screen.

The panel is a view of the run it is attached to and of nothing else: every repaint (a new
interval, the run's end, another run attached, a resize) redraws charts, figures and histogram
from that run's bounded history (probe_runs.RunHistory), so a panel titled with run #3 can never
keep run #2's histogram, and a run that has ended shows its final state and figures at once.
"""
from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from inspector.tui.probes.figures import last_interval, state_text, whole_run
from inspector.tui.probes.runs import ProbeRun, RunState
from inspector.widgets.histogram import LatencyHistogram
from inspector.widgets.probe_chart import LatencyChart, RateChart, format_rate


class RunPanel(Vertical):
    """Latency chart (log), ops/s chart, figures (last interval | whole run), histogram."""

    def __init__(self, title: str, **kw):
        super().__init__(**kw)
        self.title = title
        self.run: ProbeRun | None = None

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

    def attach(self, run: ProbeRun | None) -> None:
        """Show `run` (None: nothing): everything the panel showed before is gone."""
        self.run = run
        self.repaint()

    # the screen's hooks: anything that changes the run repaints the whole panel
    def add(self, run: ProbeRun, update=None) -> None:
        if run is self.run:
            self.repaint()

    def finished(self, run: ProbeRun) -> None:
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
        points = list(run.history)
        if points:
            late = [p.late > 0 for p in points]
            latency.show([p.p50 for p in points], [p.p99 for p in points],
                         [p.max for p in points], late, run.history.primary)
            rate.show([p.ops_per_s for p in points], late)
        else:
            latency.show_placeholder(waiting_text(run))
            rate.show_placeholder("")
        table.update(figures_table(run), layout=False)
        final = run.history.final
        if final is not None and final.extra.buckets:
            hist.border_title = "histogram: whole run"
            hist.update_buckets(final.extra.buckets)
        elif run.history.histogram.total > 0:
            hist.border_title = "histogram ≈ live" if run.active else "histogram ≈ (intervals)"
            hist.update_buckets(run.history.histogram.buckets())
        else:
            hist.border_title = "histogram"
            hist.clear("no samples yet" if run.active else waiting_text(run))


def waiting_text(run: ProbeRun) -> str:
    if run.state == RunState.FAILED:
        return f"failed: {run.error or 'no reason given'}"
    if run.active:
        return "waiting for the first interval..."
    return f"{run.state} before the first interval"


def figures_table(run: ProbeRun) -> Table | Group:
    """Two columns, each naming its scope: the last interval, the whole run (≈ estimated from
    the intervals while the run goes; exact once it has ended)."""
    last, total = last_interval(run), whole_run(run)
    table = Table(box=None, show_header=True, pad_edge=False, header_style="grey62",
                  padding=(0, 0, 0, 1))
    table.add_column("", style="bold cyan", no_wrap=True)
    table.add_column("last", justify="right", no_wrap=True)
    table.add_column("run", justify="right", no_wrap=True)
    elapsed = f" {total.seconds:.1f}s" if total.seconds is not None else ""
    table.add_row("state", "", state_text(run).append(elapsed, style="grey62"))
    table.add_row("ops", str(last.ops) if last and last.ops is not None else "-",
                  str(total.ops) if total.ops is not None else "-")
    table.add_row("ops/s", format_rate(last.ops_per_s) if last else "-",
                  format_rate(total.ops_per_s))
    center = run.history.primary
    table.add_row(center, last.latency("p50") if last else "-", total.latency("p50"))
    table.add_row("p99", last.latency("p99") if last else "-", total.latency("p99"))
    table.add_row("max", last.latency("max") if last else "-", total.latency("max"))
    errors = run.last.errors if run.last else 0
    if errors or run.error:
        table.add_row(Text("errors", style="bold red"), "", Text(str(errors), style="bold red"))
    if run.history.late:
        table.add_row(Text("late", style="magenta"), "",
                      Text(f"{run.history.late} ≤{run.history.late_max:.1f}s", style="magenta"))
    loop = run.last.extra.loop if run.last else None
    if loop == "python":
        # the IO probe's C loop is not built: requests are timed in Python, where the probe
        # process's other threads add to the latencies (README: the IO probe's C loop)
        table.add_row(Text("timing", style="yellow"), "", Text("Python", style="yellow"))
    if run.error:       # what failed, with the reason (a failed run's is in its chart too)
        return Group(table, Text(run.error, style="red", overflow="fold"))
    return table
