"""The Overview's findings list (inspector.tui.findings_rows): live findings that are active
first with the time they began, then discovery's worst first, then the live findings that
ended this session (kept, marked ENDED with both times), OK ones folded."""
from __future__ import annotations

import time

from inspector.live.findings import LiveFinding
from inspector.model import Finding, Level
from inspector.tui.findings_rows import clock, finding_rows
from inspector.tui.live import LiveView


def live(level, subject, message, since, ended=None) -> LiveFinding:
    return LiveFinding(Finding(level, subject, message, code=f"live.{subject}"), since, ended,
                       worst=level)


def test_live_first_then_discovery_then_ended_and_ok_folded():
    now = time.time()
    view = LiveView(interval=1.0)
    view.live_findings = [live(Level.WARN, "cpu", "CPU saturated (99% busy)", now - 40),
                          live(Level.CRIT, "vdb", "vdb saturated", now - 10),
                          live(Level.WARN, "sda", "sda await 900 ms", now - 300, now - 120)]
    view.findings = [Finding(Level.WARN, "eth0", "eth0 stalled", code="net.stall"),
                     *(lf.as_finding() for lf in view.live_findings)]  # as tui.live lists them
    discovered = [Finding(Level.WARN, "resolver", "a single nameserver", code="dns.single"),
                  Finding(Level.CRIT, "md0", "md0 degraded", code="md.degraded"),
                  Finding(Level.OK, "virt", "kvm guest", code="virt.ok")]
    rows, folded = finding_rows(discovered, view, show_ok=False)
    subjects = [r.subject for r in rows]
    assert subjects == ["vdb", "cpu", "md0", "eth0", "resolver", "sda"], subjects
    assert rows[0].message == f"since {clock(now - 10)}  vdb saturated"
    ended = rows[-1]
    assert ended.dim and ended.badge.plain.strip() == "ENDED"
    assert ended.message.startswith(f"ended {clock(now - 120)} (since {clock(now - 300)}")
    assert folded == 1
    # Enter on a live row details it with its times
    assert any(e.startswith("since ") for e in rows[0].finding.evidence)
    rows, folded = finding_rows(discovered, view, show_ok=True)
    assert folded == 0 and rows[-1].subject == "virt"


def test_no_live_view_lists_discovery_only():
    rows, folded = finding_rows([Finding(Level.WARN, "resolver", "one server")], None, False)
    assert [r.subject for r in rows] == ["resolver"] and folded == 0
