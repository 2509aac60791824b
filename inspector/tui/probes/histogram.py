"""A probe run's latency histogram as the TUI keeps it: a live sketch while the run goes
(LiveHistogram), the run's exact buckets once it has ended (Buckets, compact)."""
from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload


class LiveHistogram:
    """A latency histogram of fixed size (BINS_PER_DECADE log bins from 100 ns to 100 s).

    While a run goes, the child streams each interval's p50/p99/max, not its requests; each
    interval adds its operations spread over [low, p50] (half), [p50, p99] (49%) and
    [p99, max] (1%), evenly in log space: a sketch of the distribution that moves with the
    run. Exact values (a DNS round's per-server latencies) go in as they are. When the run
    ends the summary's exact histogram replaces it."""
    BINS_PER_DECADE = 10
    LOW_NS = 100.0
    DECADES = 9

    def __init__(self) -> None:
        self.counts = [0.0] * (self.BINS_PER_DECADE * self.DECADES)
        self.total = 0.0

    def _index(self, ns: float) -> float:
        pos = math.log10(max(ns, self.LOW_NS) / self.LOW_NS) * self.BINS_PER_DECADE
        return min(pos, len(self.counts) - 1e-9)

    def add(self, ns: float, weight: float = 1.0) -> None:
        self.counts[int(self._index(ns))] += weight
        self.total += weight

    def spread(self, low: float, high: float, weight: float, falling: bool = False) -> None:
        """`weight` over [low, high] in log space: evenly, or `falling` linearly to nothing at
        `high` (latency tails thin out: most of an interval's p50..p99 lies near its p50)."""
        a, b = self._index(low), self._index(max(low, high))
        if b - a < 1e-9:
            self.add(low, weight)
            return

        def mass(x: float) -> float:      # share of the weight in [a, x]
            f = (x - a) / (b - a)
            return 2 * f - f * f if falling else f
        i = int(a)
        while i < b:
            self.counts[i] += weight * (mass(min(i + 1, b)) - mass(max(i, a)))
            i += 1
        self.total += weight

    def add_interval(self, ops: int, p50: float | None, p99: float | None, mx: float | None,
                     low: float | None = None) -> None:
        if ops <= 0 or p50 is None:
            return
        p99 = max(p99 or p50, p50)
        mx = max(mx or p99, p99)
        low = min(low if low else p50 * 0.7, p50)
        self.spread(low, p50, ops * 0.5)
        self.spread(p50, p99, ops * 0.49, falling=True)
        self.spread(p99, mx, ops * 0.01, falling=True)

    def buckets(self) -> list[tuple[int, int]]:
        """(upper bound ns, count) of the non-empty bins, as LatencyRecorder.buckets()."""
        out = []
        for i, c in enumerate(self.counts):
            if c >= 0.5:
                out.append((int(self.LOW_NS * 10 ** ((i + 1) / self.BINS_PER_DECADE)), round(c)))
        return out

    def percentile(self, q: float) -> float | None:
        if self.total <= 0:
            return None
        want, seen = self.total * q / 100.0, 0.0
        for i, c in enumerate(self.counts):
            seen += c
            if seen >= want and c > 0:
                return self.LOW_NS * 10 ** ((i + 0.5) / self.BINS_PER_DECADE)
        return None


class Buckets(Sequence[tuple[int, int]]):
    """A finished run's histogram, (upper bound ns, count) pairs, in two arrays of integers:
    16 bytes a bucket where a list of tuples of ints costs several times as much, for every
    run the session keeps (tests/bench/bench_costs.py prints both)."""
    __slots__ = ("_upper", "_count")
    __hash__ = None     # type: ignore[assignment]

    def __init__(self, pairs: Iterable[tuple[int, int]] = ()) -> None:
        self._upper, self._count = array("q"), array("q")
        for upper, count in pairs:
            self._upper.append(int(upper))
            self._count.append(int(count))

    def __len__(self) -> int:
        return len(self._upper)

    @overload
    def __getitem__(self, i: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, int]]: ...

    def __getitem__(self, i: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        if isinstance(i, slice):
            return list(zip(self._upper[i], self._count[i]))
        return self._upper[i], self._count[i]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self._upper, self._count)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Buckets):
            return self._upper == other._upper and self._count == other._count
        return isinstance(other, Sequence) and list(self) == [tuple(p) for p in other]

    def __repr__(self) -> str:
        return f"Buckets({list(self)!r})"
