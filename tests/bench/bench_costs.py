"""Benchmark: the per-value costs the probes' bookkeeping is designed around, on this machine.

The probes keep HdrHistogram (pure Python) and sorting off their timed paths, and say so in
their docstrings; this prints what those choices save, instead of figures frozen in comments:

- LatencyRecorder.record_many, value by value through HdrHistogram (probes/latency.py), against
  io_stats.record_batch (the IO probe's fold) and mc_latency.record_array (the memcached
  probe's), per value and as a ratio;
- sorted() per value (what io_stats avoids for the median);
- time.monotonic_ns and time.perf_counter_ns per call (the IO probe's clock, probes/
  io_latency.py);
- percentiles of a full histogram: hdrh's get_value_at_percentile against LatencyRecorder's
  one-pass percentiles (probes/latency.py).

Run: `.venv/bin/python tests/bench/bench_costs.py` (or `make bench`).
"""
from __future__ import annotations

import random
import time
from array import array
from collections.abc import Callable

N = 200_000


def per_value(fn: Callable[[], object], n: int, repeat: int = 3) -> float:
    """Best of `repeat` runs of fn(), in nanoseconds per value."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fn()
        best = min(best, time.perf_counter_ns() - start)
    return best / n


def latencies(n: int) -> array:
    rng = random.Random(7)     # log-normal around 100 us, like a disk's QD1 reads
    return array("q", (int(rng.lognormvariate(11.5, 0.6)) for _ in range(n)))


def run() -> list[str]:
    from inspector.probes.io_stats import record_batch
    from inspector.probes.latency import PERCENTILES, LatencyRecorder
    from inspector.probes.mc_latency import record_array

    values = latencies(N)
    as_list = values.tolist()
    lines = []
    by_value = per_value(lambda: LatencyRecorder().record_many(as_list), N)
    batch = per_value(lambda: record_batch(LatencyRecorder(), as_list), N)
    arr = per_value(lambda: record_array(LatencyRecorder(), values), N)
    lines.append(f"HdrHistogram value by value (record_many): {by_value:8.0f} ns per value")
    lines.append(f"io_stats.record_batch:                     {batch:8.0f} ns per value "
                 f"({by_value / batch:4.1f}x cheaper)")
    lines.append(f"mc_latency.record_array:                   {arr:8.0f} ns per value "
                 f"({by_value / arr:4.1f}x cheaper)")
    lines.append(f"sorted():                                  "
                 f"{per_value(lambda: sorted(as_list), N):8.0f} ns per value")
    calls = 1_000_000
    for name in ("monotonic_ns", "perf_counter_ns"):
        clock = getattr(time, name)

        def many(clock=clock):
            for _ in range(calls):
                clock()
        label = f"time.{name}():"
        lines.append(f"{label:43s}{per_value(many, calls):8.0f} ns per call")
    full = LatencyRecorder()
    full.record_many(as_list)
    qs = list(PERCENTILES)
    hdrh = per_value(lambda: [full.hist.get_value_at_percentile(q) for q in qs], len(qs))
    ours = per_value(lambda: full.percentiles(qs), len(qs))
    lines.append(f"percentile, hdrh get_value_at_percentile:  {hdrh / 1e6:8.2f} ms each")
    lines.append(f"percentile, LatencyRecorder.percentiles:   {ours / 1e6:8.2f} ms each "
                 f"({hdrh / ours:4.0f}x cheaper)")
    return lines


def test_bench_costs():
    for line in run():
        print(line)


if __name__ == "__main__":
    print(f"per-value costs over {N} latencies:")
    for line in run():
        print(line)
