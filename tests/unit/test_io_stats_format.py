"""IO probe helpers: ioping's number format, size/time parsing, batch histogram, interval p99."""
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.probes.io.format import fmt_int, fmt_size, fmt_time, parse_seconds, parse_size
from inspector.probes.io.stats import BatchStats, IntervalPart, nearest_rank, record_batch
from inspector.probes.latency import LatencyRecorder


@pytest.mark.parametrize("fmt, value, text", [
    # every figure below appears in the real ioping 1.3 outputs (tests/fixtures notes)
    (fmt_time, 95_500, "95.5 us"), (fmt_time, 6_250, "6.25 us"), (fmt_time, 1_200_000, "1.20 ms"),
    (fmt_time, 400_500_000, "400.5 ms"), (fmt_time, 2_000_000_000, "2 s"),
    (fmt_time, 1_960_000_000, "1.96 s"), (fmt_int, 3_350, "3.35 k"), (fmt_int, 12, "12"),
    (fmt_int, 20_400, "20.4 k"), (fmt_int, 9_980, "9.98 k"), (fmt_size, 16 << 10, "16 KiB"),
    (fmt_size, 159.04 * 2**20, "159.0 MiB"), (fmt_size, 13.1 * 2**20, "13.1 MiB"),
    (fmt_size, 49.9 * 2**10, "49.9 KiB"), (fmt_size, 512, "512 B"),
])
def test_ioping_human_numbers(fmt, value, text):
    assert fmt(value) == text


def test_parse_sizes_and_times():
    assert parse_size("4k") == 4096 and parse_size("64m") == 64 << 20 and parse_size("1g") == 1 << 30
    assert parse_size("512") == 512 and parse_size("1KiB") == 1024
    assert parse_seconds("3") == 3 and parse_seconds("250ms") == 0.25 and parse_seconds("1m") == 60
    for bad in ("", "4x", "k", "-1"):
        with pytest.raises(ValueError):
            parse_size(bad)
    with pytest.raises(ValueError):
        parse_seconds("soon")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**11), min_size=1, max_size=200))
def test_record_batch_is_identical_to_record_many(values):
    # identical counts and moments imply identical percentiles (checked on real-like data below)
    one, batch = LatencyRecorder(), LatencyRecorder()
    one.record_many(values)
    record_batch(batch, values)
    assert bytes(one.hist.counts) == bytes(batch.hist.counts)
    assert (one.count, one.total, one.total_sq, one.min, one.max) == \
        (batch.count, batch.total, batch.total_sq, batch.min, batch.max)


def test_record_batch_on_latency_like_data_accumulates():
    rng = random.Random(3)
    one, batch = LatencyRecorder(), LatencyRecorder()
    for _ in range(3):
        values = [int(rng.lognormvariate(10.7, 1.0)) for _ in range(2000)]
        one.record_many(values)
        record_batch(batch, values)
    assert bytes(one.hist.counts) == bytes(batch.hist.counts)
    assert one.summary() == batch.summary()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=1, max_value=10**9), max_size=400),
                min_size=1, max_size=6))
def test_interval_p99_from_worker_parts_matches_sorted_list(parts):
    everything = sorted(v for part in parts for v in part)
    stats = BatchStats.combine([IntervalPart.of(p) for p in parts])
    if not everything:
        assert stats.count == 0 and stats.p99_ns is None
        return
    assert stats.count == len(everything)
    assert stats.min_ns == everything[0] and stats.max_ns == everything[-1]
    assert stats.avg_ns is not None
    assert math.isclose(stats.avg_ns, sum(everything) / len(everything))
    assert stats.p99_ns == nearest_rank(everything, 99)
