"""Latency statistics shared by every probe: exact min/avg/max/mdev plus HdrHistogram percentiles.

min/avg/max and mdev (population standard deviation, as ioping defines it) are exact, from
running sums. Percentiles come from an HdrHistogram with 3 significant digits (relative error
<= 0.1%), which keeps memory bounded however long a probe runs.

Hot loops should append raw nanoseconds to an `array('q')` and hand it over with `record_many`
at interval boundaries: HdrHistogram's pure-Python record is several times dearer per value
than the batch folds (tests/bench/bench_costs.py prints both).
"""
from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate

from hdrh.histogram import HdrHistogram

LOWEST_NS = 1
HIGHEST_NS = 3600 * 1_000_000_000   # one hour: anything slower is clamped, never dropped
SIGNIFICANT_DIGITS = 3
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


@dataclass
class LatencySummary:
    count: int
    min_ns: int | None
    avg_ns: float | None
    max_ns: int | None
    mdev_ns: float | None
    percentiles_ns: dict[str, int] = field(default_factory=dict)   # {"p50": ns, "p99.9": ns}

    def p(self, name: str) -> int | None:
        return self.percentiles_ns.get(name)


def percentile_key(q: float) -> str:
    return f"p{q:g}"


class LatencyRecorder:
    """Accumulates latencies (ns). Not thread-safe: one per worker, merged at the end."""

    def __init__(self) -> None:
        self.hist = HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
        self.count = 0
        self.total = 0
        self.total_sq = 0
        self.min: int | None = None     # None until a value is recorded
        self.max: int | None = None

    def record(self, ns: int) -> None:
        ns = min(max(int(ns), LOWEST_NS), HIGHEST_NS)
        self.hist.record_value(ns)
        self.count += 1
        self.total += ns
        self.total_sq += ns * ns
        if self.min is None or ns < self.min:
            self.min = ns
        if self.max is None or ns > self.max:
            self.max = ns

    def record_many(self, values: Iterable[int]) -> None:
        for ns in values:
            self.record(ns)

    def merge(self, other: LatencyRecorder) -> None:
        if other.count == 0:
            return
        self.hist.add(other.hist)
        self.count += other.count
        self.total += other.total
        self.total_sq += other.total_sq
        if other.min is not None and other.max is not None:    # set with its first value
            self.min = other.min if self.min is None else min(self.min, other.min)
            self.max = other.max if self.max is None else max(self.max, other.max)

    def percentile(self, q: float) -> int | None:
        """Nearest-rank percentile (the ceil(q/100*n)-th smallest value), like a sorted list."""
        return self.percentiles([q])[0] if self.count else None

    def percentiles(self, qs: Iterable[float]) -> list[int]:
        """percentile(q) for each q, from one pass over the histogram's counts.

        hdrh's get_value_at_percentile sums the counts one index at a time in Python from the
        start, for each percentile, which added up over the summaries of a 256-worker run
        (tests/bench/bench_costs.py prints both costs).
        Here the running sums are built once, in C (itertools.accumulate), and each
        percentile is a bisection; the result is hdrh's, value for value."""
        hist = self.hist
        cumulative = list(accumulate(hist.counts[:min(hist.counts_len, len(hist.counts))]))
        top = self.max
        assert top is not None, "percentiles of an empty recorder"
        out: list[int] = []
        for q in qs:
            rank = max(1, math.ceil(q / 100.0 * self.count - 1e-9))
            # hdrh rounds q/100*n to the nearest count; ask for the percentile whose rounding
            # is `rank`
            adjusted = min(100.0, 100.0 * (rank - 0.5 + 1e-6) / self.count)
            index = bisect_left(cumulative, hist.get_target_count_at_percentile(adjusted))
            if index >= len(cumulative):
                out.append(top)               # hdrh: 0, past every count; cannot happen
                continue
            # HdrHistogram reports a bucket's highest equivalent value; never above the max
            value = hist.get_highest_equivalent_value(hist.get_value_from_index(index))
            out.append(min(value, top))
        return out

    def summary(self, percentiles: Iterable[float] = PERCENTILES) -> LatencySummary:
        if not self.count:
            return LatencySummary(0, None, None, None, None, {})
        mean = self.total / self.count
        variance = max(self.total_sq / self.count - mean * mean, 0.0)
        qs = list(percentiles)
        return LatencySummary(
            count=self.count, min_ns=self.min, avg_ns=mean, max_ns=self.max,
            mdev_ns=math.sqrt(variance),
            percentiles_ns={percentile_key(q): v for q, v in zip(qs, self.percentiles(qs))})

    def buckets(self) -> list[tuple[int, int]]:
        """(upper bound ns, count) for each non-empty histogram bucket, for JSON and charts.

        What hdrh's recorded-values iterator yields, read straight from the counts array:
        the iterator steps through every bucket below the maximum in Python (thousands for a
        one-value histogram of a few hundred microseconds), which runs probes over their
        deadline (bench_costs.py prints both costs)."""
        hist = self.hist
        counts = hist.counts
        top = min(hist.counts_len, len(counts))
        return [(int(hist.get_highest_equivalent_value(hist.get_value_from_index(i))), int(c))
                for i, c in zip(range(top), counts) if c]
