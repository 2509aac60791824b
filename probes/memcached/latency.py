"""Latency bookkeeping for the memcached probe, kept off the per-request path.

`record_array` feeds an `array('q')` into the shared LatencyRecorder several times faster than
`record_many` (tests/bench/bench_costs.py prints both): values are first rounded down to the
lowest value of their HdrHistogram bucket (the histogram would put them in the same bucket
anyway) with C-level map()s, grouped with a
Counter, and recorded once per bucket with a count. Exact count/sum/min/max are kept as the
recorder keeps them. At memcslap's rate record_many alone would take a sizeable share of the
probe's one core.
"""
from __future__ import annotations

import math
from array import array
from collections import Counter
from itertools import repeat
from operator import lshift, mul, or_, rshift, sub

from inspector.probes.latency import HIGHEST_NS, LOWEST_NS, LatencyRecorder


def record_array(rec: LatencyRecorder, values: array) -> None:
    n = len(values)
    if not n:
        return
    lo, hi = min(values), max(values)
    hist = rec.hist
    if lo < LOWEST_NS or hi > HIGHEST_NS or hist.unit_magnitude != 0:
        rec.record_many(values)   # clamping or an unusual histogram: the plain path
        return
    # HdrHistogram's bucket index for v is bit_length(v | sub_bucket_mask) - (half magnitude + 1)
    base = hist.sub_bucket_half_count_magnitude + 1
    shifts = list(map(sub, map(int.bit_length, map(or_, values, repeat(hist.sub_bucket_mask))),
                      repeat(base)))
    floors = Counter(map(lshift, map(rshift, values, shifts), shifts))
    record = hist.record_value
    for value, count in floors.items():
        record(value, count)
    rec.count += n
    rec.total += sum(values)
    rec.total_sq += sum(map(mul, values, values))
    rec.min = lo if rec.min is None else min(rec.min, lo)
    rec.max = hi if rec.max is None else max(rec.max, hi)


def sorted_percentiles(values: array[int],
                       qs: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9)) -> dict[str, int]:
    """Exact nearest-rank percentiles of a small interval's values, plus max and avg (for 4 Hz
    samples)."""
    if not values:
        return {}
    ordered = sorted(values)
    n = len(ordered)
    out = {f"p{q:g}": ordered[max(1, math.ceil(q / 100.0 * n - 1e-9)) - 1] for q in qs}
    out["max"] = ordered[-1]
    out["avg"] = sum(ordered) // n
    return out
