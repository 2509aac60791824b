"""A probe run's outcome, typed: what every front end reads once a run is over.

    outcome = run_probe(request)            # never raises for a bad target or a probe's bug
    outcome.summary                         # RunSummary, or None when nothing was measured
    outcome.intervals                       # the run's Intervals as they came
    outcome.error                           # what went wrong, one line (None: nothing)
    outcome.to_json()                       # snapshots, record, export and metrics read this

A run is filed under its request (`target` is the request's, never what the run found), so a
run that failed, timed out or was never started lands under the same history target as one
that measured.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inspector.probes.base import Interval, ProbeError, RunStatus, RunSummary
from inspector.probes.request import ProbeRequest

FAILED = "failed"       # the status of an outcome with nothing measured


@dataclass
class ProbeOutcome:
    request: ProbeRequest
    summary: RunSummary | None = None       # None: nothing measured
    intervals: list[Interval] = field(default_factory=list)
    error: str | None = None                # what went wrong; None: nothing
    signum: int | None = None               # the stop signal that ended the run

    @property
    def target(self) -> str:
        """What history and diff file the run under (ProbeRequest.filed_under)."""
        return self.request.filed_under

    @property
    def status(self) -> str:
        """completed, stopped, deadline or failed (RunStatus), `failed` when nothing was
        measured."""
        return str(self.summary.status) if self.summary is not None else FAILED

    def to_json(self) -> dict[str, Any]:
        """The document form (snapshots, the history database's detail, metrics): the spec,
        kind and target, the summary's figures (RunSummary.figures, {} when nothing was
        measured) and the error."""
        return {"spec": self.request.text, "kind": str(self.request.kind),
                "target": self.target, "status": self.status,
                "summary": self.summary.figures() if self.summary is not None else {},
                "error": self.error}


def run_probe(request: ProbeRequest, *, signals: tuple[int, ...] = (),
              keep_intervals: bool = True, on_prepared: Callable[[Any], None] | None = None,
              on_interval: Callable[[Interval], None] | None = None) -> ProbeOutcome:
    """Run `request` to its end, or until one of `signals` stops it (partial figures kept).
    Never raises for a target that cannot be used or a probe's bug: the outcome says it.
    `on_prepared(probe)`: once the target is open; `on_interval`: each interval as it comes
    (`keep_intervals=False`: only there, for a run of any length)."""
    from inspector.probes.driver import ProbeDriver
    from inspector.probes.request import open_probe
    outcome = ProbeOutcome(request)

    def each(interval: Interval) -> None:
        if keep_intervals:
            outcome.intervals.append(interval)
        if on_interval is not None:
            on_interval(interval)
    probe = None
    driver: ProbeDriver | None = None
    try:
        probe = open_probe(request)
        prepared = None if on_prepared is None else (lambda: on_prepared(probe))
        driver = ProbeDriver(probe, each, signals=signals, on_prepared=prepared).run()
        outcome.signum = driver.signum
    except ProbeError as exc:
        outcome.error = str(exc)
    except Exception as exc:  # a probe's bug is reported in the outcome, never fatal
        outcome.error = f"the probe failed: {exc or type(exc).__name__}"
    result = probe.result if probe is not None else None
    if result is not None:
        outcome.summary = result.summary()
        outcome.error = outcome.error or outcome.summary.error
        if driver is not None and driver.expired and not driver.signum:
            _ended_by_its_deadline(outcome.summary, driver.probe.deadline)
    return outcome


def _ended_by_its_deadline(summary: RunSummary, deadline: float | None) -> None:
    """The driver's deadline stopped the run: that is not an operator's stop."""
    if summary.status == RunStatus.STOPPED:
        summary.status = RunStatus.DEADLINE
        summary.reason = f"deadline of {deadline:g} s reached" + (
            f"; {summary.reason}" if summary.reason else "")
