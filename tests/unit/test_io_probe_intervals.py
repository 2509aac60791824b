"""IO probe interval accounting (B11): samples tile the run, a partial last interval is rated
over its real time, ping pauses end at the deadline; and every interval carries a p50."""
import asyncio
import math
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from inspector.probes.io.latency import IoConfig, IoLatencyProbe
from inspector.probes.io.stats import MID_SAMPLE, BatchStats, IntervalPart, nearest_rank
from inspector.probes.io.target import open_target
from slowness import slack

# The tests marked serial measure interval lengths to the tens of milliseconds: alone, after
# the parallel part of `make test`. The median's tests time nothing


def run_probe(path: str, cfg: IoConfig, direct: bool):
    async def go():
        with open_target(path, direct=direct) as target:
            probe = IoLatencyProbe(target, cfg)
            samples = [s async for s in probe]
            return probe.result, samples
    t = time.monotonic()
    res, samples = asyncio.run(go())
    return res, samples, time.monotonic() - t


def assert_tiled(samples, wall_s: float):
    """Each sample covers (previous t, t]: durations add up to the run, rates are n/duration."""
    prev = 0.0
    for s in samples:
        assert math.isclose(s.t - prev, s.duration, abs_tol=1e-6), (prev, s)
        assert math.isclose(s.iops, s.requests / s.duration, rel_tol=1e-9)
        prev = s.t
    assert abs(samples[-1].t - wall_s) < 0.05, (samples[-1].t, wall_s)


def assert_rate_matches_latency(s):
    """Workers issue requests back to back, so an interval's rate is about jobs / mean
    latency: an independent check of requests / duration (not fooled by a slow device)."""
    expected = s.jobs * 1e9 / s.stats.avg_ns
    assert abs(s.iops / expected - 1) <= 0.2, (s.iops, expected, s)


@pytest.mark.serial
def test_partial_last_interval_is_rated_over_its_real_time(data_file):
    res, samples, elapsed = run_probe(
        data_file, IoConfig(deadline=1.3, sample_period=1.0, jobs=2), direct=True)
    assert res.error is None and elapsed <= 1.3 + 0.3
    assert len(samples) == 2 and samples[0].t == 1.0 and abs(samples[1].t - 1.3) <= 0.05
    assert_tiled(samples, res.wall_ns / 1e9)
    last = samples[-1]
    assert 0.25 <= last.duration <= 0.36
    assert_rate_matches_latency(last)


@pytest.mark.serial
def test_deadline_on_a_tick_leaves_no_sliver_sample(data_file):
    # the deadline falls on a tick: both workers' last shares belong to that one interval
    for _ in range(3):
        res, samples, elapsed = run_probe(data_file, IoConfig(deadline=0.5, jobs=2), direct=True)
        assert res.error is None and elapsed <= 0.5 + 0.3
        assert len(samples) == 2 and samples[0].t == 0.25, samples
        assert 0.5 <= samples[1].t <= 0.55 and samples[1].duration >= 0.25, samples
        assert_tiled(samples, res.wall_ns / 1e9)
        for s in samples:
            assert_rate_matches_latency(s)


@pytest.mark.serial
def test_ping_interval_stops_at_the_deadline_and_rates_cover_the_pause(data_file):
    # ioping -i 1 -w 1.3: requests at 0 s (warm-up) and 1 s; the run ends at 1.3 s, not 2 s
    t = time.monotonic()
    r = run_cli("probe", "io", data_file, "-i", "1", "-w", "1.3", "--json")
    elapsed = time.monotonic() - t
    assert r.status == 0, r.err
    doc = r.json()
    # the run's own clock ends at 1.3 s; the command around it (set-up, output) is what a
    # loaded machine slows
    assert elapsed <= 1.3 + slack(0.3) and doc["summary"]["wall_ns"] / 1e9 <= 1.3 + 0.05
    assert doc["summary"]["requests"] == 1 and doc["summary"]["warmups"] == 1
    samples = doc["samples"]
    timed = [s for s in samples if s["requests"]]
    assert len(timed) == 1
    # one request in the second since the warm-up's interval: ~1 iops, not 1/0.25 s = 4
    assert 0.6 <= timed[0]["duration"] <= 1.1 and timed[0]["iops"] <= 1 / 0.6
    prev = 0.0
    for s in samples:
        assert math.isclose(s["t"] - prev, s["duration"], abs_tol=1e-6)
        prev = s["t"]


def test_every_interval_carries_p50(data_file):
    res, samples, _ = run_probe(data_file, IoConfig(deadline=0.6, jobs=2), direct=True)
    assert res.error is None and samples
    for s in samples:
        st_ = s.stats
        assert st_.min_ns <= st_.p50_ns <= st_.p99_ns <= st_.max_ns
        assert s.to_json()["p50_ns"] == st_.p50_ns


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=1, max_value=10**9), max_size=MID_SAMPLE),
                min_size=1, max_size=4))
def test_interval_p50_from_worker_parts_matches_sorted_list(parts):
    everything = sorted(v for part in parts for v in part)
    stats = BatchStats.combine([IntervalPart.of(p) for p in parts])
    if not everything:
        assert stats.p50_ns is None
        return
    assert stats.p50_ns == nearest_rank(everything, 50)


def test_interval_p50_of_busy_intervals_is_within_a_few_ranks():
    # above MID_SAMPLE values per worker the median comes from an evenly spaced subsample
    rng = random.Random(5)
    parts = [[int(rng.lognormvariate(10.5, 0.4)) for _ in range(n)] for n in (9000, 4000)]
    everything = sorted(v for p in parts for v in p)
    p50 = BatchStats.combine([IntervalPart.of(p) for p in parts]).p50_ns
    lo, hi = nearest_rank(everything, 46), nearest_rank(everything, 54)
    assert p50 is not None and lo <= p50 <= hi, (lo, p50, hi)
