"""Benchmark: `inspector probe memcached` against memcslap, same load, same memcached.

    .venv/bin/python tests/bench/bench_memcached.py [N] [PAIRS]
    .venv/bin/pytest -s -o addopts="" tests/bench/bench_memcached.py    (BENCH_MC_N, BENCH_MC_PAIRS,
                                                                           BENCH_MC_WORKERS)

Five alternating rounds of
    memcslap --servers=127.0.0.1:PORT --concurrency=32 --flush --test=set --execute-number=N
    inspector probe memcached 127.0.0.1:PORT --concurrency 32 --flush --test set --execute-number N
the probe once with its C loop and once with INSPECTOR_MEMCACHED_LOOP=python (the order turned
round each round), against one memcached; prints each run's ops/s and CPU per request (user +
system of its processes, start-up included), each round's ratios to memcslap, and the lowest
and median ratio (goal: >= 1.05x in every round at no more CPU per request). Then memcslap
against the probe at 3,000 connections (BENCH_MC_BIG_N requests each, 3 alternating pairs),
and the time a 3,000-connection ramp step takes to open and run. memcslap's keys are 20-60 B
and its values 50-5000 B with N distinct keys: the probe's defaults are the same. The machine
may be shared: compare only within one run.

Then the probe's own choices (probes/memcached/workers.py, probes/memcached/probe.py), on the same server:
the same load with --workers 1 and --workers 2 in turn (BENCH_MC_WORKER_N requests per
connection, 5000), each run's ops/s and CPU per op (the load processes included), and the
peak RSS of each load process; and the memory a Workload holds per key (memcslap's sizes).
"""
from __future__ import annotations

import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import psutil

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from conftest import inspector_bin  # noqa: E402
from memcached_server import start_memcached  # noqa: E402

CONCURRENCY = 32
MEMCSLAP_TIME = re.compile(r"Time to set\s+(\d+) keys by\s+(\d+) threads:\s+([\d.]+) seconds")
PYTHON_LOOP = {"INSPECTOR_MEMCACHED_LOOP": "python"}    # the probe without its C loop
GOAL = 1.05


def child_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_memcslap(port: int, n: int, concurrency: int = CONCURRENCY) -> float:
    out = subprocess.run(
        ["memcslap", f"--servers=127.0.0.1:{port}", f"--concurrency={concurrency}", "--flush",
         "--test=set", f"--execute-number={n}"],
        capture_output=True, text=True, timeout=600, check=True).stdout
    m = MEMCSLAP_TIME.search(out)
    assert m, out
    return int(m.group(1)) / float(m.group(3))


def run_inspector(port: int, n: int, concurrency: int = CONCURRENCY,
                  env: dict[str, str] | None = None) -> dict:
    p = subprocess.run(
        [inspector_bin(), "probe", "memcached", f"127.0.0.1:{port}", "--concurrency",
         str(concurrency), "--flush", "--test", "set", "--execute-number", str(n), "--json",
         "--workers", os.environ.get("BENCH_MC_WORKERS", "1")],
        capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def measured(run, requests: int) -> tuple[float, float, object]:
    """(ops/s, CPU seconds per request of the processes it started, what run() returned)."""
    c0 = child_cpu_s()
    got = run()
    cpu = (child_cpu_s() - c0) / requests
    ops = got if isinstance(got, float) else got["ops_per_s"]
    return ops, cpu, got


def bench_pairs(n: int, pairs: int) -> float:
    """memcslap, the probe with its C loop and with its Python path, alternating."""
    server = start_memcached()
    requests = CONCURRENCY * n
    runs = {
        "memcslap": lambda: run_memcslap(server.port, n),
        "C loop": lambda: run_inspector(server.port, n),
        "Python path": lambda: run_inspector(server.port, n, env=PYTHON_LOOP),
    }
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    try:
        for i in range(pairs):
            order = list(runs) if i % 2 == 0 else list(runs)[::-1]
            line = []
            for name in order:
                ops, cpu, doc = measured(runs[name], requests)
                got[name].append((ops, cpu))
                if isinstance(doc, dict):
                    assert doc["ops_total"] == requests
                    assert all(c["ok"] for c in doc["server"]["checks"]), doc["server"]["checks"]
                    p99 = doc["ops"]["set"]["latency"]["percentiles_ns"]["p99"]
                    line.append(f"{name} {ops:6.0f} ops/s {cpu * 1e6:5.1f} us CPU/op "
                                f"p99 {p99 / 1e6:.2f} ms")
                else:
                    line.append(f"{name} {ops:6.0f} ops/s {cpu * 1e6:5.1f} us CPU/op")
            theirs = got["memcslap"][-1][0]
            print(f"round {i + 1}: " + "; ".join(line) + "; ratios "
                  f"C {got['C loop'][-1][0] / theirs:.2f}x, "
                  f"Python {got['Python path'][-1][0] / theirs:.2f}x", flush=True)
    finally:
        server.kill()
    ratios = [ours[0] / theirs[0] for ours, theirs in zip(got["C loop"], got["memcslap"])]
    cheaper = sum(ours[1] <= theirs[1] for ours, theirs in zip(got["C loop"], got["memcslap"]))
    py = [ours[0] / theirs[0] for ours, theirs in zip(got["Python path"], got["memcslap"])]
    cpu_us = {name: statistics.median(c for _, c in runs_) * 1e6 for name, runs_ in got.items()}
    print(f"C loop / memcslap ops/s over {pairs} rounds: lowest {min(ratios):.2f}x, median "
          f"{statistics.median(ratios):.2f}x, {sum(r >= GOAL for r in ratios)} of {pairs} at "
          f">= {GOAL}x; no more CPU per request than memcslap in {cheaper} of {pairs}. "
          f"Python path: median {statistics.median(py):.2f}x. Median CPU per request: "
          + ", ".join(f"{name} {us:.1f} us" for name, us in cpu_us.items()))
    return statistics.median(ratios)


def raise_nofile(needed: int) -> None:
    """memcslap opens one connection per thread and inherits this limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))


def bench_big_load(connections: int = 3000, n: int = 100, pairs: int = 3) -> float:
    """memcslap against the probe at `connections` connections, `n` sets each, alternating."""
    raise_nofile(connections + 1024)
    server = start_memcached("-c", str(connections + 1024))
    ratios = []
    requests = connections * n
    try:
        for i in range(pairs):
            first_theirs = i % 2 == 0
            results = {}
            for name in (("memcslap", "probe") if first_theirs else ("probe", "memcslap")):
                if name == "memcslap":
                    results[name] = measured(
                        lambda: run_memcslap(server.port, n, connections), requests)
                else:
                    results[name] = measured(
                        lambda: run_inspector(server.port, n, connections), requests)
            (theirs, their_cpu, _), (ours, our_cpu, _) = results["memcslap"], results["probe"]
            ratios.append(ours / theirs)
            print(f"{connections} connections, pair {i + 1}: memcslap {theirs:6.0f} ops/s "
                  f"{their_cpu * 1e6:5.1f} us CPU/op; probe {ours:6.0f} ops/s "
                  f"{our_cpu * 1e6:5.1f} us CPU/op; ratio {ours / theirs:.2f}x", flush=True)
    finally:
        server.kill()
    median = statistics.median(ratios)
    print(f"{connections} connections: median ratio probe/memcslap {median:.2f}x")
    return median


def bench_big_step(connections: int = 3000, step_s: float = 2.0) -> dict:
    raise_nofile(connections + 1024)
    server = start_memcached("-c", str(connections + 1024))
    try:
        p = subprocess.run(
            [inspector_bin(), "probe", "memcached", server.address, "--ramp",
             "--start-connections", str(connections), "--max-connections", str(connections),
             "--step-seconds", str(step_s), "--json"],
            capture_output=True, text=True, timeout=120)
        doc = json.loads(p.stdout)
    finally:
        server.kill()
    step = doc["steps"][0]
    print(f"{connections}-connection step: opened {step['opened']} in {step['open_s']:.3f} s, "
          f"ran {step['run_s']:.2f} s at {step['ops_per_s']:.0f} ops/s, "
          f"p50 {step['p50_ns'] / 1e6:.2f} ms, p99 {step['p99_ns'] / 1e6:.2f} ms, "
          f"errors {step['errors'] or 'none'}")
    return step


def run_with_workers(port: int, n: int, workers: int) -> dict:
    """One set run with `workers` load processes: ops/s, CPU per op (every process of the
    run), and the peak RSS of each load process (sampled every 50 ms)."""
    c0 = child_cpu_s()
    p = subprocess.Popen(
        [inspector_bin(), "probe", "memcached", f"127.0.0.1:{port}", "--concurrency",
         str(CONCURRENCY), "--test", "set", "--execute-number", str(n), "--json", "--workers",
         str(workers)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak: dict[int, int] = {}
    parent = psutil.Process(p.pid)
    while p.poll() is None:
        try:
            for child in parent.children():
                if "inspector.probes.memcached.workers" in " ".join(child.cmdline()):
                    peak[child.pid] = max(peak.get(child.pid, 0), child.memory_info().rss)
        except psutil.Error:         # a load process that has just ended
            pass
        time.sleep(0.05)
    out, err = p.communicate()
    assert p.returncode == 0, err
    doc = json.loads(out)
    assert doc["ops_total"] == CONCURRENCY * n
    return {"ops_per_s": doc["ops_per_s"], "cpu_per_op": (child_cpu_s() - c0) / doc["ops_total"],
            "load_rss": sorted(peak.values())}


def bench_workers(n: int, rounds: int) -> dict:
    server = start_memcached()
    runs: dict[int, list[dict]] = {1: [], 2: []}
    try:
        print(f"\n--workers 1 against --workers 2, set, {CONCURRENCY} connections x {n} requests, "
              f"memcached on the same host ({os.cpu_count()} CPUs)")
        for i in range(rounds):
            for workers in ((1, 2) if i % 2 == 0 else (2, 1)):
                got = run_with_workers(server.port, n, workers)
                runs[workers].append(got)
                rss = ", ".join(f"{r / 2**20:.0f}" for r in got["load_rss"]) or "none"
                print(f"round {i + 1} --workers {workers}: {got['ops_per_s']:9.0f} ops/s, "
                      f"{got['cpu_per_op'] * 1e6:5.1f} us CPU/op incl. start-up; "
                      f"load processes' peak RSS MB: {rss}", flush=True)
    finally:
        server.kill()
    med = {w: {"ops_per_s": statistics.median(r["ops_per_s"] for r in rs),
               "cpu_per_op": statistics.median(r["cpu_per_op"] for r in rs)}
           for w, rs in runs.items()}
    load_rss = statistics.median(x for r in runs[2] for x in r["load_rss"])
    print(f"median: --workers 1 {med[1]['ops_per_s']:.0f} ops/s at "
          f"{med[1]['cpu_per_op'] * 1e6:.1f} us CPU/op; --workers 2 {med[2]['ops_per_s']:.0f} "
          f"ops/s at {med[2]['cpu_per_op'] * 1e6:.1f} us CPU/op; a load process "
          f"{load_rss / 2**20:.0f} MB RSS")
    return {"median": med, "load_rss": load_rss}


def bench_workload_memory(keys: int = 100_000) -> float:
    """Bytes a Workload holds per key (keys and pre-encoded requests), memcslap's sizes."""
    from inspector.probes.memcached.probe import MAX_KEY_COUNT
    from inspector.probes.memcached.workload import SizeRange, Workload
    tracemalloc.start()
    try:
        workload = Workload(keys, SizeRange(20, 60), SizeRange(50, 5000))
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    per_key = held / keys
    print(f"workload: {per_key:.0f} bytes a key ({keys} keys, set requests "
          f"{'joined per send' if workload.set_requests is None else 'pre-encoded'}); "
          f"MAX_KEY_COUNT ({MAX_KEY_COUNT}) keys: {per_key * MAX_KEY_COUNT / 1e6:.0f} MB")
    # the build is CPU work inside the run's deadline (mc_workload.build_workload)
    start = time.perf_counter()
    Workload(keys, SizeRange(20, 60), SizeRange(50, 5000))
    build_s = time.perf_counter() - start
    print(f"workload: built in {build_s:.3f} s for {keys} keys; MAX_KEY_COUNT keys: about "
          f"{build_s * MAX_KEY_COUNT / keys:.1f} s")
    return per_key


def test_bench_memcached_workers_and_memory():
    n = int(os.environ.get("BENCH_MC_WORKER_N", "5000"))
    out = bench_workers(n, int(os.environ.get("BENCH_MC_PAIRS", "3")))
    assert out["load_rss"] > 0 and all(m["ops_per_s"] > 0 for m in out["median"].values())
    assert bench_workload_memory() > 0


def test_bench_memcached():
    n = int(os.environ.get("BENCH_MC_N", "20000"))
    pairs = int(os.environ.get("BENCH_MC_PAIRS", "5"))
    assert bench_pairs(n, pairs) > 0
    assert bench_big_load(n=int(os.environ.get("BENCH_MC_BIG_N", "100"))) > 0
    step = bench_big_step()
    assert step["opened"] == 3000 and not step["errors"]


if __name__ == "__main__":
    n_arg = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    pairs_arg = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    bench_pairs(n_arg, pairs_arg)
    bench_big_load(n=int(os.environ.get("BENCH_MC_BIG_N", "100")))
    bench_big_step()
    bench_workers(5000, pairs_arg)
    bench_workload_memory()
