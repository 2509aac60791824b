"""Cheap batch statistics for the IO probe's workers.

`LatencyRecorder.record_many` costs ~2.5 us per value (pure-Python HdrHistogram), which at
20k+ requests per second would steal several percent of the GIL from the timed loop. Here a
batch is folded in with C-speed builtins: exact sums, min and max directly, and the histogram
from counts of values rounded down, within each power-of-two range, to a multiple of that
range's HdrHistogram bucket width. Bucket bounds are multiples of their width, so a rounded
value lands in the same bucket as the raw one: the histogram is identical to recording value
by value (a unit test checks it), with one record_value call per distinct bucket.
"""
from __future__ import annotations

import math
import operator
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from itertools import repeat
from typing import Sequence

from inspector.probes.latency import HIGHEST_NS, LOWEST_NS, LatencyRecorder


def record_batch(recorder: LatencyRecorder, values: Sequence[int]) -> None:
    """Same result as recorder.record_many(values), at a fraction of the cost."""
    if not values:
        return
    ordered = sorted(values)
    lo, hi = ordered[0], ordered[-1]
    if lo < LOWEST_NS or hi > HIGHEST_NS or recorder.hist.unit_magnitude:
        recorder.record_many(ordered)     # clamping or an unusual histogram: the plain path
        return
    record_value = recorder.hist.record_value
    unit_bits = recorder.hist.sub_bucket_half_count_magnitude + 1   # below 2**unit_bits: width 1
    start = 0
    while start < len(ordered):
        bits = ordered[start].bit_length()
        end = bisect_left(ordered, 1 << bits, start)    # the rest of this power-of-two range
        shift = max(0, bits - unit_bits)
        segment = ordered[start:end]
        counts = Counter(map(operator.rshift, segment, repeat(shift))) if shift \
            else Counter(segment)
        for value, count in counts.items():
            record_value(value << shift, count)
        start = end
    recorder.count += len(ordered)
    recorder.total += sum(ordered)
    recorder.total_sq += sum(map(operator.mul, ordered, ordered))
    recorder.min = lo if recorder.min is None else min(recorder.min, lo)
    recorder.max = hi if recorder.max is None else max(recorder.max, hi)


@dataclass
class BatchStats:
    """Exact statistics of one interval from its sorted latencies."""
    count: int = 0
    min_ns: int | None = None
    avg_ns: float | None = None
    max_ns: int | None = None
    mdev_ns: float | None = None
    p50_ns: int | None = None
    p99_ns: int | None = None

    @classmethod
    def of_sorted(cls, ordered: Sequence[int]) -> "BatchStats":
        n = len(ordered)
        if not n:
            return cls()
        total = sum(ordered)
        mean = total / n
        var = max(sum(map(operator.mul, ordered, ordered)) / n - mean * mean, 0.0)
        return cls(n, ordered[0], mean, ordered[-1], math.sqrt(var),
                   nearest_rank(ordered, 50), nearest_rank(ordered, 99))


def nearest_rank(ordered: Sequence[int], q: float) -> int:
    """The ceil(q/100*n)-th smallest value, like LatencyRecorder.percentile."""
    rank = max(1, math.ceil(q / 100.0 * len(ordered) - 1e-9))
    return ordered[rank - 1]
