"""A run's figures as the Probes screen shows them, each with its scope: the last interval, or
the whole run so far (cumulative). While a run goes, its whole-run p50/p99 come from the live
histogram (probe_runs.LiveHistogram) and are shown with `≈`; once it has ended they are the
summary's exact figures, the ones the CLI prints for the same run."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from inspector.tui.probes.runs import ProbeRun, RunState
from inspector.widgets.probe_chart import format_latency, format_rate

STATE_STYLES = {RunState.RUNNING: "bold green", RunState.STARTING: "green",
                RunState.FAILED: "bold red", RunState.ERRORS: "bold red",
                RunState.STOPPED: "yellow", RunState.DONE: ""}


@dataclass
class Figures:
    ops: int | None
    ops_per_s: float | None
    p50: float | None
    p99: float | None
    max: float | None
    seconds: float | None
    approx: bool = False        # p50/p99 estimated from the live histogram

    def latency(self, name: str) -> str:
        value = format_latency(getattr(self, name))
        return f"≈{value}" if self.approx and name in ("p50", "p99") and value != "-" else value


def last_interval(run: ProbeRun) -> Figures | None:
    u = run.history.last
    if u is None:
        return None
    return Figures(u.interval_ops, u.ops_per_s, u.p50, u.p99, u.max, None)


def whole_run(run: ProbeRun) -> Figures:
    final = run.history.final
    if final is not None:
        pct = final.extra.percentiles_ns
        return Figures(final.ops, final.ops_per_s, pct.get("p50", final.p50),
                       pct.get("p99", final.p99), final.extra.max_ns or final.max,
                       final.elapsed)
    u = run.history.last
    if u is None:
        return Figures(None, None, None, None, None, None)
    hist = run.history.histogram
    return Figures(u.ops, u.ops / u.elapsed if u.elapsed > 0 else None, hist.percentile(50),
                   hist.percentile(99), run.history.max_ns, u.elapsed, approx=True)


def errors_of(run: ProbeRun) -> int:
    last = run.last
    return last.errors if last is not None else 0


def state_text(run: ProbeRun) -> Text:
    return Text(str(run.state), style=STATE_STYLES.get(run.state, ""))


def rate_text(value: float | None) -> str:
    return "-" if value is None else f"{format_rate(value)}"
