"""Multi-worker IO probe runs (B16): the summary is the merge of the workers' figures:
requests and busy time summed, IOPS summed, percentiles from the added histograms."""
import asyncio
import itertools
import math
import random
import re
import threading

from hdrh.histogram import HdrHistogram

from conftest import run_cli
from inspector.probes.io.latency import IoConfig, IoLatencyProbe
from inspector.probes.io.stats import nearest_rank
from inspector.probes.io.target import open_target
from inspector.probes.latency import HIGHEST_NS, LOWEST_NS, SIGNIFICANT_DIGITS


class PerWorkerClock:
    """A fake clock per worker thread: each thread, on its first call, takes the next
    latency list; t1 - t0 pairs are its latencies (warm-up first), 1 us between requests."""

    def __init__(self, lists):
        self.lists = iter(lists)
        self.local = threading.local()
        self.lock = threading.Lock()

    def __call__(self):
        st = self.local
        if not hasattr(st, "now"):
            with self.lock:
                st.latencies = iter(next(self.lists))
            st.now, st.inside = 10**12, False
        st.now += next(st.latencies) if st.inside else 1000
        st.inside = not st.inside
        return st.now


def test_summary_is_the_merge_of_the_workers(data_file):
    rng = random.Random(7)
    jobs, per_worker = 3, 1500
    # workers with different latency distributions, so a wrong merge shows
    lists = [[900_000] + [int(rng.lognormvariate(10 + j, 0.6)) + 1 for _ in range(per_worker)]
             for j in range(jobs)]
    clock = PerWorkerClock(lists)
    with open_target(data_file, direct=False) as target:
        probe = IoLatencyProbe(target, IoConfig(count=jobs * (per_worker + 1), jobs=jobs,
                                                clock=clock, seed=3))
        res = asyncio.run(probe.run_to_end())
    assert res.error is None and len(res.workers) == jobs
    workers = res.workers
    assert res.requests == sum(w.requests for w in workers) == jobs * per_worker
    assert res.warmups == sum(w.warmups for w in workers) == jobs
    assert res.busy_ns == sum(w.busy_ns for w in workers)
    assert math.isclose(res.iops_mean, sum(w.iops_mean for w in workers), rel_tol=1e-12)
    assert sum(c for _, c in res.histogram()) == res.requests
    # each worker's own figures are exactly one of the latency lists
    timed = sorted((sorted(lst[1:]) for lst in lists), key=lambda times: times[0])
    assert all(w.latency.min_ns is not None for w in workers)
    mine = sorted(workers, key=lambda w: w.latency.min_ns or 0)
    for w, values in zip(mine, timed):
        assert w.requests == len(values) and w.busy_ns == sum(values)
        assert w.latency.min_ns == values[0] and w.latency.max_ns == values[-1]
    # percentiles: those of the workers' histograms added, and of the sorted union
    merged = HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
    for w in workers:
        assert w.recorder is not None, "an in-process run keeps each worker's recorder"
        merged.add(w.recorder.hist)
    union = sorted(itertools.chain.from_iterable(timed))
    lat = res.latency
    assert lat.min_ns == union[0] and lat.max_ns == union[-1]
    assert lat.avg_ns is not None
    assert math.isclose(lat.avg_ns, sum(union) / len(union), rel_tol=1e-12)
    for q in (50, 90, 99, 99.9):
        p = lat.percentiles_ns[f"p{q:g}"]
        hdr = merged.get_value_at_percentile(q)
        assert merged.values_are_equivalent(p, hdr) or p == union[-1], (q, p, hdr)
        exact = nearest_rank(union, q)
        assert abs(p - exact) <= exact * 0.001 + 1, (q, p, exact)


def test_cli_workers_add_up(data_file):
    r = run_cli("probe", "io", data_file, "-j", "3", "-w", "0.5", "--json")
    assert r.status == 0, r.err
    doc = r.json()
    s = doc["summary"]
    workers = s["workers"]
    assert len(workers) == 3 and all(w["requests"] > 0 for w in workers)
    assert s["requests"] == sum(w["requests"] for w in workers)
    assert s["warmups"] == sum(w["warmups"] for w in workers) == 3
    assert s["busy_ns"] == sum(w["busy_ns"] for w in workers)
    assert math.isclose(s["iops"], sum(w["iops"] for w in workers), rel_tol=1e-9)
    assert sum(c for _, c in doc["histogram"]) == s["requests"]
    assert sum(x["requests"] for x in doc["samples"]) == s["requests"]
    assert s["min_ns"] == min(w["min_ns"] for w in workers)
    assert s["max_ns"] == max(w["max_ns"] for w in workers)


def test_human_summary_lists_workers_whose_requests_add_up(data_file):
    r = run_cli("probe", "io", data_file, "-j", "2", "-w", "0.4", "-q")
    assert r.status == 0, r.err
    lines = r.out.splitlines()
    per_worker = [line for line in lines if re.match(r"worker \d: ", line)]
    assert [line.split(":")[0] for line in per_worker] == ["worker 1", "worker 2"]

    def count(pattern: str, text: str) -> float:      # ioping's "12.3 k" numbers
        found = re.search(pattern, text, re.M)
        assert found, (pattern, text)
        num, _, unit = found[1].partition(" ")
        return float(num) * {"k": 10**3, "M": 10**6, "G": 10**9}.get(unit, 1)
    total = count(r"^([\d.]+(?: [kMG])?) requests completed", r.out)
    parts = [count(r"^worker \d: ([\d.]+(?: [kMG])?) requests", line) for line in per_worker]
    assert abs(sum(parts) - total) <= 0.01 * total + 2, (parts, total)
    assert all("p50" in line and "p99" in line for line in per_worker)


def test_raw_limit_folds_latencies_mid_run(data_file, monkeypatch):
    """The TUI's raw limit (IoConfig.raw_limit) bounds the raw latencies a worker holds: they
    are folded into the histogram mid-run instead of growing 8 bytes a request (32 MB by
    default), and the statistics still count every request."""
    import inspector.probes.io.latency as io_latency
    folds = []
    real = io_latency.record_batch

    def counting(recorder, raw):
        folds.append(len(raw))
        return real(recorder, raw)
    monkeypatch.setattr(io_latency, "record_batch", counting)
    limit = io_latency.LATENCY_SLOTS
    with open_target(data_file, direct=False) as target:
        res = asyncio.run(IoLatencyProbe(target, IoConfig(count=3 * limit + 1,
                                                          raw_limit=limit)).run_to_end())
    assert res.latency.count == 3 * limit      # the warm-up is not counted
    assert len(folds) >= 3 and max(folds) < 2 * limit, folds
