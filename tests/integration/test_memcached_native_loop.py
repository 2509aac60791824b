"""The memcached load's C loop (probes/memcached/_mcloop.c) against a real memcached: the same
counts, errors and server checks as the Python path, replies split over reads, error replies
handed back and the connection going on; its latency bookkeeping equals the Python one. The
C loop is built by `make test` (gcc and the Python headers are system packages it installs)."""
from __future__ import annotations

import asyncio
import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inspector.probes.memcached.latency as mc_latency
from inspector.probes.base import McTest
from inspector.probes.latency import LatencyRecorder
from inspector.probes.memcached import engine as mc_engine
from inspector.probes.memcached.probe import MemcachedLoad, MemcachedProbe, ProbeSummary
from inspector.probes.memcached.workload import SizeRange


def run(load: MemcachedLoad, loop: str, monkeypatch, lanes: list[int] | None = None
        ) -> tuple[ProbeSummary, bool]:
    """The probe's summary and whether the C loop drove the load (its lanes into `lanes`)."""
    if loop == "python":
        monkeypatch.setenv(mc_engine.LOOP_ENV, "python")
    else:
        monkeypatch.delenv(mc_engine.LOOP_ENV, raising=False)
    seen = []

    async def main():
        probe = MemcachedProbe(load)
        async for _ in probe:
            engine = probe._engine
            if isinstance(engine, mc_engine.Engine):
                seen.append(engine.native is not None)
                if engine.native is not None and lanes is not None:
                    lanes.append(engine.native.lanes())
        assert probe.summary is not None, "a finished run has its summary"
        return probe.summary
    summary = asyncio.run(main())
    return summary, any(seen)


@pytest.mark.parametrize("loop", ["c", "python"])
def test_error_replies_are_counted_and_the_load_goes_on(memcached, monkeypatch, loop):
    """memcached -I 1k (and its chunk size) refuses values above its item size with SERVER_ERROR: each is counted
    as a rejected set, the connection sends its next request, and the server's counters agree."""
    server = memcached("-I", "1k", "-o", "slab_chunk_max=1024")
    load = MemcachedLoad(server.host, server.port, concurrency=8, execute_number=300,
                         test=McTest.SET, key_count=400, key_size=SizeRange(10, 20),
                         value_size=SizeRange(10, 3000))
    summary, native = run(load, loop, monkeypatch)
    assert native == (loop == "c")
    assert summary.status == "completed", summary.reason
    rejected = summary.errors.get("server_error", 0)
    assert rejected > 100 and set(summary.errors) == {"server_error"}, summary.errors
    sets = summary.ops["set"]
    assert sets.sent == 8 * 300 == sets.ok + sets.failed and sets.failed == rejected
    assert summary.connections_failed == 0
    assert summary.server is not None, "the server's counters were read"
    assert all(c.ok for c in summary.server.checks), summary.server.checks


@pytest.mark.parametrize("loop", ["c", "python"])
def test_big_values_arrive_over_several_reads(memcached, monkeypatch, loop):
    """Gets of 100-300 KB values: each reply spans several reads of the C loop's 16 KB buffer
    (and sets several writes), and still counts as one hit with one latency."""
    server = memcached("-m", "256", "-I", "2m")
    load = MemcachedLoad(server.host, server.port, concurrency=4, execute_number=40,
                         test=McTest.GET, key_count=20, key_size=SizeRange(10, 20),
                         value_size=SizeRange(100_000, 300_000))
    summary, native = run(load, loop, monkeypatch)
    assert native == (loop == "c")
    assert summary.status == "completed", summary.reason
    assert summary.errors == {}
    assert summary.get_hits == 4 * 40 == summary.ops["get"].ok
    assert summary.ops["get"].latency.count == 160
    assert summary.server is not None, "the server's counters were read"
    assert all(c.ok for c in summary.server.checks), summary.server.checks


def test_mix_draws_sets_at_the_ratio(memcached, monkeypatch):
    server = memcached()
    load = MemcachedLoad(server.host, server.port, concurrency=8, execute_number=500,
                         test=McTest.MIX, set_ratio=0.3, key_count=300,
                         key_size=SizeRange(10, 20), value_size=SizeRange(10, 200))
    summary, native = run(load, "c", monkeypatch)
    assert native and summary.status == "completed" and summary.errors == {}
    sets, gets = summary.ops["set"].ok, summary.ops["get"].ok
    assert sets + gets == 8 * 500 and 0.25 < sets / (sets + gets) < 0.35
    assert summary.get_hits + summary.get_misses == gets
    assert summary.server is not None, "the server's counters were read"
    assert all(c.ok for c in summary.server.checks), summary.server.checks


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**12), min_size=1, max_size=400))
def test_c_bookkeeping_equals_python(values):
    arr = array("q", values)
    a, b = LatencyRecorder(), LatencyRecorder()
    mc_latency.record_array(a, arr)
    folded = mc_latency._fold(b.hist, arr)
    assert folded is not None
    floors, counts, total, total_sq, lo, hi = folded
    assert mc_latency._fold_in_c(a.hist, arr) is not None
    assert (a.count, a.total, a.total_sq, a.min, a.max) == (
        len(values), total, total_sq, lo, hi)
    for value, count in zip(floors, counts):
        b.hist.record_value(value, count)
    assert list(a.hist.counts) == list(b.hist.counts)
    got = mc_latency.sorted_percentiles(arr)
    ordered = sorted(values)
    for q in (50, 90, 99, 99.9):
        assert got[f"p{q:g}"] == ordered[max(1, math.ceil(q / 100 * len(values))) - 1]
    assert got["max"] == ordered[-1] and got["avg"] == sum(values) // len(values)


def test_values_the_histogram_clamps_take_the_plain_path():
    arr = array("q", [0, 5, 10**13])
    assert mc_latency._fold_in_c(LatencyRecorder().hist, arr) is None
    a, b = LatencyRecorder(), LatencyRecorder()
    mc_latency.record_array(a, arr)
    b.record_many(list(arr))
    assert a.summary() == b.summary()


@pytest.mark.parametrize("connections, want", [(1, 1), (9, 2)])
def test_two_lanes_share_the_connections(memcached, monkeypatch, connections, want):
    """On two cores or more the connections are split over two threads (one alone stays one);
    every request is counted once either way."""
    monkeypatch.setattr(mc_engine.os, "cpu_count", lambda: 2)
    server = memcached()
    load = MemcachedLoad(server.host, server.port, concurrency=connections, execute_number=300,
                         test=McTest.MIX, set_ratio=0.5, key_count=100,
                         key_size=SizeRange(10, 20), value_size=SizeRange(10, 200))
    lanes: list[int] = []
    summary, native = run(load, "c", monkeypatch, lanes)
    assert native and set(lanes) == {want}
    assert summary.status == "completed" and summary.errors == {}
    assert summary.ops_total == connections * 300
    assert summary.ops["set"].sent + summary.ops["get"].sent == connections * 300
    assert summary.server is not None, "the server's counters were read"
    assert all(c.ok for c in summary.server.checks), summary.server.checks
