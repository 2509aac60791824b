"""The TUI's probe process: `python -m inspector.tui.probes.process REQUEST --parent PID`.

The CLI's run streamed as JSON lines (inspector.probes.child), plus the verdicts `probe dns`
prints (inspector.health.dns: CRIT for a first server down ...), which the probe layer cannot
give itself: the health rules live a floor above it.
"""
from __future__ import annotations

from inspector.probes.base import ProbeResult
from inspector.probes.child import main as stream_run

MODULE = "inspector.tui.probes.process"


def verdicts(result: ProbeResult) -> list[dict[str, str]]:
    """The CLI's findings on a DNS run's result, worst first; [] for other kinds."""
    from inspector.health.dns import probe_rules
    from inspector.probes.dns.failover import DnsProbeResult
    if not isinstance(result.detail, DnsProbeResult):
        return []
    findings = sorted(probe_rules(result.detail), key=lambda f: -f.level.severity)
    return [{"level": f.level.label, "code": f.code, "message": f.message} for f in findings]


if __name__ == "__main__":
    raise SystemExit(stream_run(verdicts=verdicts))
