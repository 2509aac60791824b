"""Latency bookkeeping for the memcached probe, kept off the per-request path.

`record_array` feeds an `array('q')` into the shared LatencyRecorder several times faster than
`record_many` (tests/bench/bench_costs.py prints both): values are first rounded down to the
lowest value of their HdrHistogram bucket (the histogram would put them in the same bucket
anyway), counted per bucket, and recorded once per bucket with a count. Exact
count/sum/min/max are kept as the recorder keeps them. `sorted_percentiles` gives an
interval's exact nearest-rank percentiles. Both run in C when the load's C loop is built
(probes/memcached/_mcloop.c: one pass each, no Python int per value), else with C-level map()s
and a sort: at memcslap's rate that was most of the interpreter's work left per request.
"""
from __future__ import annotations

import math
from array import array
from collections import Counter
from itertools import repeat
from operator import lshift, mul, or_, rshift, sub

from hdrh.histogram import HdrHistogram

from inspector.probes.latency import HIGHEST_NS, LOWEST_NS, LatencyRecorder

try:
    from inspector.probes.memcached import _mcloop
except ImportError:
    _mcloop = None  # type: ignore[assignment]

# (floors, counts, total, total_sq, min, max)
Folded = tuple[list[int], list[int], int, int, int, int]


def record_array(rec: LatencyRecorder, values: array) -> None:
    n = len(values)
    if not n:
        return
    hist = rec.hist
    folded = None
    if hist.unit_magnitude == 0:
        use_c = _mcloop is not None and values.typecode == "q"
        folded = _fold_in_c(hist, values) if use_c else _fold(hist, values)
    if folded is None:
        rec.record_many(values)   # clamping or an unusual histogram: the plain path
        return
    floors, counts, total, total_sq, lo, hi = folded
    record = hist.record_value
    for value, count in zip(floors, counts):
        record(value, count)
    rec.count += n
    rec.total += total
    rec.total_sq += total_sq
    rec.min = lo if rec.min is None else min(rec.min, lo)
    rec.max = hi if rec.max is None else max(rec.max, hi)


def _fold_in_c(hist: HdrHistogram, values: array) -> Folded | None:
    try:
        folded = _mcloop.fold(values, hist.sub_bucket_mask, hist.sub_bucket_half_count_magnitude)
    except ValueError:            # a value below LOWEST_NS: clamped by the plain path
        return None
    return None if folded[5] > HIGHEST_NS else folded


def _fold(hist: HdrHistogram, values: array) -> Folded | None:
    lo, hi = min(values), max(values)
    if lo < LOWEST_NS or hi > HIGHEST_NS:
        return None
    # HdrHistogram's bucket index for v is bit_length(v | sub_bucket_mask) - (half magnitude + 1)
    base = hist.sub_bucket_half_count_magnitude + 1
    shifts = list(map(sub, map(int.bit_length, map(or_, values, repeat(hist.sub_bucket_mask))),
                      repeat(base)))
    floors = Counter(map(lshift, map(rshift, values, shifts), shifts))
    return (list(floors), list(floors.values()), sum(values), sum(map(mul, values, values)),
            lo, hi)


def sorted_percentiles(values: array[int],
                       qs: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9)) -> dict[str, int]:
    """Exact nearest-rank percentiles of a small interval's values, plus max and avg (for 4 Hz
    samples)."""
    if not values:
        return {}
    n = len(values)
    ranks = [max(1, math.ceil(q / 100.0 * n - 1e-9)) for q in qs]
    if _mcloop is not None and values.typecode == "q" and ranks == sorted(ranks):
        picked, top, total = _mcloop.nearest_ranks(values, ranks)
    else:
        ordered = sorted(values)
        picked, top, total = [ordered[r - 1] for r in ranks], ordered[-1], sum(ordered)
    out = {f"p{q:g}": value for q, value in zip(qs, picked)}
    out["max"] = top
    out["avg"] = total // n
    return out
