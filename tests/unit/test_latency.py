"""Shared latency statistics: exact moments, percentiles within HdrHistogram's bound."""
import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.probes.latency import LatencyRecorder


def sorted_percentile(values, q):
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**10), min_size=1, max_size=400))
def test_percentiles_match_sorted_list_within_bound(values):
    rec = LatencyRecorder()
    rec.record_many(values)
    s = rec.summary()
    assert s.count == len(values) and s.min_ns == min(values) and s.max_ns == max(values)
    assert s.avg_ns is not None
    assert math.isclose(s.avg_ns, sum(values) / len(values), rel_tol=1e-9)
    for q in (50, 90, 99, 99.9):
        exact = sorted_percentile(values, q)
        assert abs(rec.percentile(q) - exact) <= exact * 0.001 + 1


def test_mdev_is_population_stdev_and_merge():
    rng = random.Random(7)
    a, b = [rng.randint(50_000, 2_000_000) for _ in range(500)], [rng.randint(1, 10**9) for _ in range(50)]
    ra, rb = LatencyRecorder(), LatencyRecorder()
    ra.record_many(a)
    rb.record_many(b)
    ra.merge(rb)
    allv = a + b
    mean = sum(allv) / len(allv)
    pstdev = math.sqrt(sum((v - mean) ** 2 for v in allv) / len(allv))
    mdev_ns = ra.summary().mdev_ns
    assert mdev_ns is not None and math.isclose(mdev_ns, pstdev, rel_tol=1e-6)
    assert sum(c for _, c in ra.buckets()) == len(allv)


def test_empty_summary():
    s = LatencyRecorder().summary()
    assert s.count == 0 and s.avg_ns is None and s.percentiles_ns == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**12), min_size=1, max_size=3000),
       st.lists(st.floats(min_value=0.001, max_value=100.0), min_size=1, max_size=6))
def test_percentiles_in_one_pass_are_hdrhs_own(values, qs):
    """LatencyRecorder.percentiles bisects running sums built once; hdrh's own
    get_value_at_percentile walks the counts from the start for each one (5 ms each, 1.7 s
    for the summaries of a 256-worker run). Same values, whatever the data."""
    r = LatencyRecorder()
    r.record_many(values)
    for q, got in zip(qs, r.percentiles(qs)):
        rank = max(1, math.ceil(q / 100.0 * r.count - 1e-9))
        adjusted = min(100.0, 100.0 * (rank - 0.5 + 1e-6) / r.count)
        assert got == min(r.hist.get_value_at_percentile(adjusted), r.max)
