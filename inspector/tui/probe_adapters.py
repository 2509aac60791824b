"""The probe layer's typed figures as the TUI's ProbeUpdate: an Interval (every kind has the
same shape) while the run goes on, its RunSummary once it has ended."""
from __future__ import annotations

from inspector.probes.base import Interval, RunSummary
from inspector.tui.messages import ProbeUpdate, UpdateExtra


def interval_update(run_id: int, interval: Interval) -> ProbeUpdate:
    io, mc, dns = interval.io, interval.memcached, interval.dns
    return ProbeUpdate(
        run_id=run_id, elapsed=interval.t, ops=interval.ops_total, ops_per_s=interval.ops_per_s,
        p50=interval.p50_ns, p99=interval.p99_ns, max=interval.max_ns,
        errors=interval.errors_total,
        extra=UpdateExtra(primary=interval.center, loop=io.loop if io else None,
                          bytes_per_s=io.bytes_per_s if io else None,
                          connections=mc.connections if mc else None,
                          per_server_ms=dns.per_server_ms if dns else None))


def final_update(run_id: int, summary: RunSummary, errors: int) -> ProbeUpdate:
    """`errors`: the run's count (its last interval's)."""
    lat = summary.latency
    return ProbeUpdate(
        run_id=run_id, elapsed=summary.seconds, ops=summary.requests,
        ops_per_s=summary.ops_per_s, p50=lat.p("p50"), p99=lat.p("p99"), max=lat.max_ns,
        errors=errors,
        extra=UpdateExtra(final=True, loop=summary.io.loop if summary.io else None,
                          percentiles_ns=dict(lat.percentiles_ns),
                          buckets=list(summary.histogram), max_ns=lat.max_ns,
                          note=summary.note))
