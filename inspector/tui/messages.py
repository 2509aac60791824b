"""Messages: the only way results from worker threads and probe tasks reach the UI."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
class UpdateExtra:
    """What a run's panel shows besides the figures (tui.probe_adapters fills it)."""
    final: bool = False                     # the run's summary, not an interval
    primary: str = "p50"                    # the chart's first series: p50, or avg
    loop: str | None = None                 # io: "python" when the C loop is not built
    bytes_per_s: float | None = None        # io
    connections: int | None = None          # memcached: open at the end of the interval
    per_server_ms: dict[str, float | None] | None = None    # dns: each server, this round
    per_server_kind: dict[str, str] | None = None           # dns: answered, refused, timeout...
    min_ns: float | None = None             # io: the interval's fastest request
    percentiles_ns: dict[str, int] = field(default_factory=dict)   # final: the whole run's
    # final: its histogram, (upper bound ns, count) pairs (a probe_adapters.Buckets)
    buckets: Sequence[tuple[int, int]] = field(default_factory=list)
    max_ns: float | None = None             # final
    note: str = ""                          # final: the target, or how the run ended


@dataclass
class ProbeUpdate:
    """One interval of a probe, or its final figures, normalised for the screens (latencies
    in ns)."""
    run_id: int
    elapsed: float
    ops: int                    # total operations so far
    ops_per_s: float            # in this interval (final: over the run)
    p50: float | None
    p99: float | None
    max: float | None
    errors: int = 0             # so far
    extra: UpdateExtra = field(default_factory=UpdateExtra)
    interval_ops: int = 0       # in this interval
    sent: float | None = None   # time.monotonic() when the probe's process made it
    late: float = 0.0           # seconds it was held up on its way to the UI (0: on time)


class ProbeProgress(Message):
    def __init__(self, update: ProbeUpdate):
        super().__init__()
        self.update = update


class ProbeFinished(Message):
    def __init__(self, run_id: int, summary: Any, error: str | None):
        super().__init__()
        self.run_id, self.summary, self.error = run_id, summary, error
