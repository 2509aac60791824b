"""The probe layer's typed figures as the TUI's ProbeUpdate: an Interval (every kind has the
same shape) while the run goes on, its RunSummary once it has ended."""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

from inspector.probes.base import Interval, RunSummary
from inspector.tui.messages import ProbeUpdate, UpdateExtra


class Buckets(Sequence):
    """A finished run's histogram, (upper bound ns, count) pairs, in two arrays of integers:
    16 bytes a bucket where a list of tuples of ints costs several times as much, for every
    run the session keeps (tests/bench/bench_costs.py prints both)."""
    __slots__ = ("_upper", "_count")
    __hash__ = None     # type: ignore[assignment]

    def __init__(self, pairs: Iterable[tuple[int, int]] = ()):
        self._upper, self._count = array("q"), array("q")
        for upper, count in pairs:
            self._upper.append(int(upper))
            self._count.append(int(count))

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, int]]) -> Buckets:
        return pairs if isinstance(pairs, cls) else cls(pairs)

    def __len__(self) -> int:
        return len(self._upper)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(zip(self._upper[i], self._count[i]))
        return self._upper[i], self._count[i]

    def __iter__(self):
        return zip(self._upper, self._count)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Buckets):
            return self._upper == other._upper and self._count == other._count
        return isinstance(other, Sequence) and list(self) == [tuple(p) for p in other]

    def __repr__(self) -> str:
        return f"Buckets({list(self)!r})"


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
                          buckets=Buckets.of(summary.histogram), max_ns=lat.max_ns,
                          per_server_ms=per_server_ms, per_server_kind=per_server_kind,
                          note=summary.note))
