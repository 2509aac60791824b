"""Messages: the only way results from worker threads and probe tasks reach the UI."""
from __future__ import annotations

from typing import Any

from textual.message import Message

from inspector.model import Report
from inspector.probes.base import Interval, RunSummary


class ReportCollected(Message):
    def __init__(self, report: Report | None, error: str | None, seconds: float, at: float):
        super().__init__()
        self.report, self.error, self.seconds, self.at = report, error, seconds, at


class LiveSampled(Message):
    def __init__(self, sample: Any, error: str | None = None):
        super().__init__()
        self.sample, self.error = sample, error


class ProbeProgress(Message):
    """A probe run's process has opened its target (`interval` None, with its `notes`) or sent
    an interval; applied to its run on the UI thread (tui.probes.runs.ProbeManager)."""

    def __init__(self, run_id: int, interval: Interval | None = None, sent: float | None = None,
                 notes: list[str] | None = None):
        super().__init__()
        self.run_id, self.interval, self.sent, self.notes = run_id, interval, sent, notes


class ProbeFinished(Message):
    """A probe run's process has ended: how the run ended (`state`, a tui.probes.runs.RunState),
    its summary, error and verdicts; applied to its run on the UI thread."""

    def __init__(self, run_id: int, state: str, summary: RunSummary | None, error: str | None,
                 verdicts: list[dict[str, str]] | None = None):
        super().__init__()
        self.run_id, self.state, self.summary, self.error = run_id, state, summary, error
        self.verdicts = verdicts or []
