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
  one-pass percentiles, and the buckets of a one-value histogram: hdrh's recorded-values
  iterator against LatencyRecorder.buckets (probes/latency.py);
- an interval's figures (IntervalPart.of) in Python against the C loop's part() per value
  (probes/io/stats.py, probes/io/_ioloop.c);
- one fold of a full 2^18 raw buffer (record_batch) and its share of a worker's time at 15k
  requests per second (IoConfig.raw_limit, probes/io/latency.py);
- request offsets per offset: the power-of-two lane mask, the general draw and rng.choices
  (_Worker._offsets, probes/io/latency.py);
- memory: a finished run's histogram kept by the TUI as Buckets against a list of tuples
  (inspector/tui/probes/histogram.py), and one full series of the TUI's trends (inspector/tui/
  trends.py);
in fresh interpreters:
- the RSS uvloop adds to an asyncio loop (probes/driver.py);
- `import pyroute2` against our three SIOCETHTOOL ioctls on lo (inspector/discover/
  net_offloads.py, pyproject.toml);
- importing the section renderers (rich) and the TUI screens (Textual) after
  inspector.report.sections (inspector/report/sections.py);
- the interpreter's start-up up to `inspector check`'s module (inspector/commands/check.py).

Run: `.venv/bin/python tests/bench/bench_costs.py` (or `make bench`).
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
import tracemalloc
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


def row(label: str, figures: str) -> str:
    return f"{label:43s}{figures}"


def latencies(n: int) -> array:
    rng = random.Random(7)     # log-normal around 100 us, like a disk's QD1 reads
    return array("q", (int(rng.lognormvariate(11.5, 0.6)) for _ in range(n)))


def run() -> list[str]:
    from inspector.probes.io.stats import record_batch
    from inspector.probes.latency import PERCENTILES, LatencyRecorder
    from inspector.probes.memcached.latency import record_array

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
    one = LatencyRecorder()
    one.record_many([300_000])           # one value of a few hundred microseconds
    walk = per_value(lambda: [(v.value_iterated_to, v.count_at_value_iterated_to)
                              for v in one.hist.get_recorded_iterator()], 1)
    read = per_value(one.buckets, 1)
    lines.append(row("one-value histogram's buckets, hdrh:", f"{walk / 1e6:8.2f} ms"))
    lines.append(row("the same, LatencyRecorder.buckets:",
                     f"{read / 1e6:8.2f} ms ({walk / read:4.0f}x cheaper)"))
    return lines + interval_costs(values) + offset_costs() + memory_costs(full)


FOLD_VALUES = 1 << 18
RATE = 15_000                 # requests per second of one worker on a fast NVMe drive


def interval_costs(values: array) -> list[str]:
    """What a worker spends on its latencies outside the timed window, per value."""
    from inspector.probes.io.latency import LATENCY_SLOTS, _ioloop
    from inspector.probes.io.stats import IntervalPart, record_batch
    from inspector.probes.latency import LatencyRecorder

    chunks = [values[i:i + LATENCY_SLOTS] for i in range(0, len(values), LATENCY_SLOTS)]

    def parts(native):
        for chunk in chunks:
            IntervalPart.of(chunk, native)
    python = per_value(lambda: parts(None), len(values))
    lines = [row(f"IntervalPart.of, Python, {LATENCY_SLOTS} at a time:",
                 f"{python:8.0f} ns per value")]
    if _ioloop is None:
        lines.append(row("IntervalPart.of, C:", "not built (probes/io/_ioloop.c)"))
    else:
        native = per_value(lambda: parts(_ioloop.part), len(values))
        lines.append(row("IntervalPart.of, C (_ioloop.part):",
                         f"{native:8.0f} ns per value ({python / native:4.1f}x cheaper)"))
    full = values[:FOLD_VALUES]
    fold_ns = per_value(lambda: record_batch(LatencyRecorder(), full), 1)
    share = fold_ns / (FOLD_VALUES / RATE * 1e9)
    lines.append(row("one fold of 2^18 latencies (record_batch):",
                     f"{fold_ns / 1e6:8.1f} ms, {100 * share:.2f}% of a worker's time at "
                     f"{RATE // 1000}k requests/s"))
    return lines


def offset_costs() -> list[str]:
    from inspector.probes.io.latency import IoConfig, _Stop, _Worker
    from inspector.probes.io.target import IoTarget

    def worker(working_set: int) -> _Worker:     # never started: only its offsets are drawn
        target = IoTarget("bench", "file", -1, working_set, direct=False, writable=False,
                          cached=True)
        return _Worker(0, target, IoConfig(count=2), None, None, _Stop(), threading.Event(),
                       lambda: None)
    n = 4096                                       # OFFSET_CHUNK: one refill
    lane, general = worker(64 << 20), worker(48 << 20)
    assert lane.lane_mask and not general.lane_mask
    masked = per_value(lambda: lane._offsets(n), n, repeat=20)
    drawn = per_value(lambda: general._offsets(n), n, repeat=20)
    choices = per_value(lambda: general.rng.choices(general.population, k=n), n, repeat=20)
    return [row("offsets, power-of-two lane mask:", f"{masked:8.0f} ns per offset"),
            row("offsets, general sizes (randbytes modulo):", f"{drawn:8.0f} ns per offset"),
            row("offsets, rng.choices:",
                f"{choices:8.0f} ns per offset ({choices / drawn:4.1f}x the general draw)")]


def held(build: Callable[[], object]) -> tuple[int, object]:
    """Bytes still allocated by build() once it has returned, and what it built."""
    tracemalloc.start()
    try:
        built = build()
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return size, built


def memory_costs(recorder) -> list[str]:
    from inspector.tui.probes.histogram import Buckets
    from inspector.tui.trends import CAPACITY, Trends

    pairs = recorder.buckets()
    as_tuples, _ = held(lambda: [(int(u), int(c)) for u, c in pairs])
    as_arrays, _ = held(lambda: Buckets(pairs))
    rng = random.Random(3)
    values = [rng.random() * 100 for _ in range(CAPACITY)]

    def one_series():
        trends = Trends()
        for v in values:
            trends.add("cpu.user", v * 1.0)    # a new float each, as live samples are
        return trends
    series, _ = held(one_series)
    n = len(pairs)
    return [row(f"{n}-bucket histogram, list of tuples:", f"{as_tuples / n:8.0f} B a bucket"),
            row("the same as Buckets (two arrays):",
                f"{as_arrays / n:8.0f} B a bucket ({as_tuples / as_arrays:4.1f}x smaller)"),
            row(f"one trends series, {CAPACITY} values:", f"{series / 1024:8.1f} KB")]


# Each runs in a fresh interpreter and prints one JSON object.
UVLOOP_RSS = """
import asyncio, json
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) * 1024
asyncio.new_event_loop()
before = rss()
import uvloop
uvloop.new_event_loop()
print(json.dumps({"uvloop": rss() - before}))
"""
NETLINK = """
import json, time
from inspector.discover.net_offloads import _ioctl_feature_rows
ioctls = []
for _ in range(20):
    t = time.perf_counter()
    rows = _ioctl_feature_rows("lo")
    ioctls.append(time.perf_counter() - t)
assert isinstance(rows, list), rows
t = time.perf_counter()
import pyroute2
print(json.dumps({"ioctls": min(ioctls), "pyroute2": time.perf_counter() - t}))
"""
SECTION_IMPORTS = """
import json, time
from inspector.report import sections
t0 = time.perf_counter()
for s in sections.SECTIONS:
    sections.load(s.render)
t1 = time.perf_counter()
for s in sections.SECTIONS:
    if s.screen:
        sections.load(s.screen.ref)
print(json.dumps({"renderers": t1 - t0, "screens": time.perf_counter() - t1}))
"""
STARTUP = """
import json, time
import inspector.cli, inspector.commands.check
print(json.dumps({"at": time.monotonic()}))
"""


def fresh(script: str, runs: int = 3) -> dict[str, float]:
    """The smallest of each figure a script prints, over `runs` fresh interpreters."""
    best: dict[str, float] = {}
    for _ in range(runs):
        started = time.monotonic()          # CLOCK_MONOTONIC: the same clock in the child
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=True, timeout=120).stdout
        figures = json.loads(out)
        if "at" in figures:
            figures = {"startup": figures["at"] - started}
        for key, value in figures.items():
            best[key] = min(best.get(key, value), value)
    return best


def process_costs() -> list[str]:
    uv = fresh(UVLOOP_RSS)["uvloop"]
    net = fresh(NETLINK)
    imports = fresh(SECTION_IMPORTS)
    startup = fresh(STARTUP)["startup"]
    return [row("uvloop (import, a loop) over asyncio's:", f"{uv / 2**20:8.1f} MB of RSS"),
            row("ethtool features of lo, our 3 ioctls:", f"{net['ioctls'] * 1e3:8.2f} ms"),
            row("import pyroute2:", f"{net['pyroute2'] * 1e3:8.0f} ms "
                f"({net['pyroute2'] / net['ioctls']:.0f}x the ioctls)"),
            row("import the section renderers (rich):", f"{imports['renderers'] * 1e3:8.0f} ms"),
            row("import the TUI screens (Textual):", f"{imports['screens'] * 1e3:8.0f} ms"),
            row("start-up to inspector check's module:",
                f"{startup * 1e3:8.0f} ms (exec, interpreter, imports)")]


def test_bench_costs():
    for line in run() + process_costs():
        print(line)


if __name__ == "__main__":
    print(f"per-value costs over {N} latencies:")
    for line in run() + process_costs():
        print(line)
