"""A run ended by its own deadline reads so in its outcome (status "deadline", the deadline and
what was kept), not as an operator's stop; a run that finishes its rounds in time completes."""
from __future__ import annotations

from dns_responders import Responder
from inspector.probes.base import ProbeKind, RunStatus
from inspector.probes.outcome import run_probe
from inspector.probes.request import ProbeRequest


def test_a_dns_run_cut_by_its_deadline_says_deadline_not_stopped():
    server = Responder("127.0.0.1", 0, "ok")
    try:
        # 5 rounds a second apart cannot fit in 1.5 s: the driver's deadline ends the run
        cut = run_probe(ProbeRequest(ProbeKind.DNS, server.server, 1.5, count=5,
                                     name="probe.test"))
        whole = run_probe(ProbeRequest(ProbeKind.DNS, server.server, 5.0, count=1,
                                       name="probe.test"))
    finally:
        server.close()
    assert cut.summary is not None and cut.error is None, cut.error
    assert cut.status == "deadline" and cut.summary.status == RunStatus.DEADLINE
    assert cut.summary.reason == "deadline of 1.5 s reached; partial rounds kept"
    assert 1 <= cut.summary.requests < 5            # the rounds done are kept
    assert cut.to_json()["status"] == "deadline"
    assert whole.summary is not None and whole.status == "completed", whole.to_json()
    assert whole.summary.reason == "" and whole.summary.requests == 1
