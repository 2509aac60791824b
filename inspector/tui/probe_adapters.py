"""The probe layer's typed figures as the TUI's ProbeUpdate: an Interval (every kind has the
same shape) while the run goes on, its RunSummary once it has ended."""
from __future__ import annotations

from inspector.probes.base import Interval, RunSummary
from inspector.tui.messages import ProbeUpdate, UpdateExtra


def interval_update(run_id: int, interval: Interval, sent: float | None = None) -> ProbeUpdate:
    """`sent`: when the probe's process made the interval (time.monotonic(), the same clock
    in every process), so the UI can tell an interval that reached it late."""
    io, mc, dns = interval.io, interval.memcached, interval.dns
    return ProbeUpdate(
        run_id=run_id, elapsed=interval.t, ops=interval.ops_total, ops_per_s=interval.ops_per_s,
        p50=interval.p50_ns, p99=interval.p99_ns, max=interval.max_ns,
        errors=interval.errors_total, interval_ops=interval.ops, sent=sent,
        extra=UpdateExtra(primary=interval.center, loop=io.loop if io else None,
                          bytes_per_s=io.bytes_per_s if io else None,
                          connections=mc.connections if mc else None,
                          # a refusal is quick and no answer: only answers have a latency
                          per_server_ms={s.server: s.latency_ms if s.kind == "answered" else None
                                         for s in dns.servers} if dns else None,
                          per_server_kind={s.server: s.kind for s in dns.servers} if dns else None,
                          min_ns=io.min_ns if io else None))


def final_update(run_id: int, summary: RunSummary, errors: int) -> ProbeUpdate:
    """`errors`: the run's count (its last interval's)."""
    lat = summary.latency
    per_server_ms = per_server_kind = None
    if summary.dns is not None:
        per_server_ms = {k: None if v.latency_us is None else v.latency_us / 1000.0
                         for k, v in summary.dns.servers.items()}
        per_server_kind = {k: v.kind for k, v in summary.dns.servers.items()}
    return ProbeUpdate(
        run_id=run_id, elapsed=summary.seconds, ops=summary.requests,
        ops_per_s=summary.ops_per_s, p50=lat.p("p50"), p99=lat.p("p99"), max=lat.max_ns,
        errors=errors,
        extra=UpdateExtra(final=True, loop=summary.io.loop if summary.io else None,
                          percentiles_ns=dict(lat.percentiles_ns),
                          buckets=list(summary.histogram), max_ns=lat.max_ns,
                          per_server_ms=per_server_ms, per_server_kind=per_server_kind,
                          note=summary.note))
