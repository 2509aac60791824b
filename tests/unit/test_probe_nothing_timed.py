"""An IO run that timed no request (only its warm-up completed: a loaded host, a slow disk, or a
count of one) is a failed run that says why, not a completed one with no figures: snapshots,
exports and the fleet view would otherwise show it as healthy."""
from __future__ import annotations

from inspector.probes.base import ProbeKind, RunStatus
from inspector.probes.outcome import run_probe
from inspector.probes.request import ProbeRequest


def test_an_io_run_that_timed_nothing_says_so(tmp_path):
    warm_up_only = run_probe(ProbeRequest(ProbeKind.IO, str(tmp_path), 5.0, count=1))
    timed = run_probe(ProbeRequest(ProbeKind.IO, str(tmp_path), 5.0, count=3))
    summary = warm_up_only.summary
    assert summary is not None and summary.requests == 0
    assert summary.status == RunStatus.FAILED and warm_up_only.status == "failed"
    assert warm_up_only.error is not None and warm_up_only.error.startswith("no request timed in ")
    assert warm_up_only.error.endswith("(only the warm-up request completed)")
    assert timed.status == "completed" and timed.error is None
    assert timed.summary is not None and timed.summary.requests == 2     # the warm-up aside
