"""Messages: the only way results from worker threads and probe tasks reach the UI."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from inspector.model import Report


class ReportCollected(Message):
    def __init__(self, report: Report | None, error: str | None, seconds: float, at: float):
        super().__init__()
        self.report, self.error, self.seconds, self.at = report, error, seconds, at


class LiveSampled(Message):
    def __init__(self, sample: Any, error: str | None = None):
        super().__init__()
        self.sample, self.error = sample, error


@dataclass
class ProbeUpdate:
    """One interval of a probe, normalised for the screens (latencies in ns)."""
    run_id: int
    elapsed: float
    ops: int                    # total operations so far
    ops_per_s: float            # in this interval
    p50: float | None
    p99: float | None
    max: float | None
    errors: int = 0
    extra: dict | None = None   # probe-specific figures (per-server latency for DNS ...)


class ProbeProgress(Message):
    def __init__(self, update: ProbeUpdate):
        super().__init__()
        self.update = update


class ProbeFinished(Message):
    def __init__(self, run_id: int, summary: Any, error: str | None):
        super().__init__()
        self.run_id, self.summary, self.error = run_id, summary, error
