"""A run's figures as the Probes screen shows them, each with its scope: the last interval, or
the whole run so far. While a run goes, its whole-run p50/p99 come from the live histogram
(tui.probes.histogram.LiveHistogram) and are shown with `≈`; once it has ended they are the
summary's exact figures, the ones the CLI prints for the same run."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from inspector.probes.base import Interval
from inspector.tui.probes.runs import LiveRun, RunState
from inspector.widgets.probe_chart import format_latency, format_rate

STATE_STYLES = {RunState.RUNNING: "bold green", RunState.STARTING: "green",
                RunState.FAILED: "bold red", RunState.ERRORS: "bold red",
                RunState.STOPPED: "yellow", RunState.DONE: ""}


@dataclass
class WholeRun:
    """The whole run so far: estimated while it goes, the summary's once it has ended."""
    ops: int | None
    ops_per_s: float | None
    p50: float | None           # ns
    p99: float | None
    max: float | None
    seconds: float | None
    approx: bool = False        # p50/p99 estimated from the live histogram

    def latency(self, name: str) -> str:
        value = format_latency(getattr(self, name))
        return f"≈{value}" if self.approx and name in ("p50", "p99") and value != "-" else value


def whole_run(run: LiveRun) -> WholeRun:
    s = run.summary
    if s is not None:
        lat = s.latency
        return WholeRun(s.requests, s.ops_per_s, lat.p("p50"), lat.p("p99"), lat.max_ns,
                        s.seconds)
    last = run.last
    if last is None:
        return WholeRun(None, None, None, None, None, None)
    hist = run.histogram
    return WholeRun(last.ops_total, last.ops_total / last.t if last.t > 0 else None,
                    hist.percentile(50), hist.percentile(99), run.max_ns, last.t, approx=True)


def interval_latency(interval: Interval | None, name: str) -> str:
    """An interval's p50 (its mean where the probe has no median), p99 or max."""
    if interval is None:
        return "-"
    return format_latency({"p50": interval.p50_ns, "p99": interval.p99_ns,
                           "max": interval.max_ns}[name])


def state_text(run: LiveRun) -> Text:
    return Text(str(run.state), style=STATE_STYLES.get(run.state, ""))


def rate_text(value: float | None) -> str:
    return "-" if value is None else f"{format_rate(value)}"
