"""Cheap batch statistics for the IO probe's workers.

`LatencyRecorder.record_many` goes through pure-Python HdrHistogram value by value, which at
20k+ requests per second would steal several percent of the GIL from the timed loop
(tests/bench/bench_costs.py prints its cost per value against this module's). Here a
batch is folded in with C-speed builtins: exact sums, min and max directly, and the histogram
from counts of values rounded down to a multiple of their HdrHistogram bucket's width. Bucket
bounds are multiples of their width, so a rounded value lands in the same bucket as the raw
one: the histogram is identical to recording value by value (a unit test checks it), with one
record_value call per distinct bucket. No sort: sorting costs about as much per value as the
whole fold (bench_costs.py prints it).
"""
from __future__ import annotations

import bisect
import heapq
import math
import operator
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import repeat

from inspector.probes.latency import HIGHEST_NS, LOWEST_NS, LatencyRecorder


def record_batch(recorder: LatencyRecorder, values: Sequence[int]) -> None:
    """Same result as recorder.record_many(values), at a fraction of the cost (no sort)."""
    if not values:
        return
    lo, hi = min(values), max(values)
    if lo < LOWEST_NS or hi > HIGHEST_NS or recorder.hist.unit_magnitude:
        recorder.record_many(values)      # clamping or an unusual histogram: the plain path
        return
    unit_bits = recorder.hist.sub_bucket_half_count_magnitude + 1   # below 2**unit_bits: width 1
    # 1) in C: count values rounded to the narrowest bucket width in the batch (the minimum's)
    shift = max(0, lo.bit_length() - unit_bits)
    counts = Counter(map(operator.rshift, values, repeat(shift))) if shift else Counter(values)
    # 2) per distinct value: round to its own bucket's width, merging equal buckets
    buckets: dict[int, int] = {}
    get = buckets.get
    for key, count in counts.items():
        value = key << shift
        width_bits = value.bit_length() - unit_bits
        if width_bits > 0:
            value = value >> width_bits << width_bits
        buckets[value] = get(value, 0) + count
    record_value = recorder.hist.record_value
    for value, count in buckets.items():
        record_value(value, count)
    recorder.count += len(values)
    recorder.total += sum(values)
    recorder.total_sq += sum(map(operator.mul, values, values))
    recorder.min = lo if recorder.min is None else min(recorder.min, lo)
    recorder.max = hi if recorder.max is None else max(recorder.max, hi)


@dataclass
class BatchStats:
    """Statistics of one interval, built from the workers' hand-offs without sorting."""
    count: int = 0
    min_ns: int | None = None
    avg_ns: float | None = None
    max_ns: int | None = None
    p99_ns: int | None = None
    p50_ns: int | None = None     # exact up to MID_SAMPLE requests per worker and interval

    @classmethod
    def combine(cls, parts: Sequence[IntervalPart]) -> BatchStats:
        parts = [p for p in parts if p.count]
        n = sum(p.count for p in parts)
        if not n:
            return cls()
        top = sorted((v for p in parts for v in p.top), reverse=True)
        rank_from_top = n - 1 - nearest_rank_index(n, 99)      # 0-based position in `top`
        return cls(n, min(p.min_ns for p in parts), sum(p.total for p in parts) / n,
                   max(p.max_ns for p in parts), top[rank_from_top], _merged_median(parts, n))


@dataclass
class IntervalPart:
    """One worker's share of an interval: C-speed aggregates plus the largest ~1% values,
    enough for the interval's p99 once merged with the other workers' parts."""
    count: int = 0
    total: int = 0
    min_ns: int = 0
    max_ns: int = 0
    top: list[int] = field(default_factory=list)
    mid: list[int] = field(default_factory=list)   # sorted; every value, or an even subsample

    @classmethod
    def of(cls, values: list[int] | array[int], native: Callable | None = None) -> IntervalPart:
        """`native`: the C loop's part(values, k, step), for an array('q') of values: the
        same figures at a fraction of the Python cost (bench_costs.py prints both per value)."""
        n = len(values)
        if not n:
            return cls()
        # k >= n - rank(p99) + 1 for this worker, and the union of every worker's k covers
        # the merged interval's rank (sum of floors + 2 per worker >= floor of the sum + 1)
        k = n // 100 + 2
        # the median from at most MID_SAMPLE values: sorting every value of a busy interval
        # would add sorted()'s cost per value to every request (bench_costs.py prints it); an
        # evenly spaced subsample of 1024 requests puts the median within ~1.6% of the ranks
        step = -(-n // MID_SAMPLE)
        if native is not None:
            total, lo, hi, top, mid = native(values, k, step)
            return cls(n, total, lo, hi, top, mid)
        if not isinstance(values, list):
            # an array('q') makes a new int object per element on every pass (sum, min, max,
            # nlargest): one list first makes them once for the five passes below
            values = values.tolist()
        mid = sorted(values[::step]) if step > 1 else sorted(values)
        return cls(n, sum(values), min(values), max(values), heapq.nlargest(k, values), mid)


MID_SAMPLE = 1024


def _merged_median(parts: Sequence[IntervalPart], n: int) -> int:
    """Nearest-rank p50 of the union of the parts, each `mid` standing for `count` values.

    Exact when every part kept all its values; otherwise each kept value weighs count/len.
    A binary search over the values (bisect per part, in C) instead of merging the lists."""
    if len(parts) == 1 and len(parts[0].mid) == n:
        return parts[0].mid[nearest_rank_index(n, 50)]
    weighted = [(p.mid, p.count / len(p.mid)) for p in parts if p.mid]
    rank = nearest_rank_index(n, 50) + 1
    lo = min(m[0] for m, _ in weighted)
    hi = max(m[-1] for m, _ in weighted)
    while lo < hi:           # the smallest value with at least `rank` values at or below it
        mid = (lo + hi) // 2
        if sum(w * bisect.bisect_right(m, mid) for m, w in weighted) >= rank - 1e-9:
            hi = mid
        else:
            lo = mid + 1
    return lo


def nearest_rank_index(n: int, q: float) -> int:
    """0-based index of the nearest-rank q-th percentile among n sorted values."""
    return max(1, math.ceil(q / 100.0 * n - 1e-9)) - 1


def nearest_rank(ordered: Sequence[int], q: float) -> int:
    """The ceil(q/100*n)-th smallest value, like LatencyRecorder.percentile."""
    return ordered[nearest_rank_index(len(ordered), q)]
