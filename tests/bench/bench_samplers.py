"""Benchmark: the live samplers against the sysstat tools that show the same figures.

1. Cost per tick. One `inspector top` tick (sample of disks, NICs, CPU, every process's state
   and IO, then rates) is compared with what an operator runs to see the same things:
   `iostat -x -d` (disks), `pidstat -d` (per-process IO), `mpstat -P ALL` (CPU) and
   `sar -n DEV` (NICs). Each reference tool runs twice, with K1 and K2 reports at 1 s; the
   difference of their CPU time (user+sys of the child) divided by K2-K1 is its marginal CPU
   per report (median of three such pairs), so process start-up is not counted against them. Ours is process CPU time per
   tick, median and best over many ticks. Printed: each figure and the ratio ours / theirs.
2. Processes: CPU per sample with about 1000 processes (sleepers started up to that count).
3. Memory over a long run: LiveSampler at 10 Hz for --minutes (default 10), RSS and the number
   of live objects printed each minute; the run fails if RSS grows by more than 2 MiB after the
   first minute.

Run: `.venv/bin/python tests/bench/bench_samplers.py [--minutes M] [--skip-long]`.
"""
from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import subprocess
import sys
import time

from inspector.live import LiveSampler, rates
from inspector.live.text import format_block
from inspector.roots.host import HostRoot

REFERENCE = {
    "iostat -x -d": ["iostat", "-x", "-d", "1"],
    "pidstat -d": ["pidstat", "-d", "1"],
    "mpstat -P ALL": ["mpstat", "-P", "ALL", "1"],
    "sar -n DEV": ["sar", "-n", "DEV", "1"],
}
K1, K2 = 2, 7


def child_cpu(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "LC_ALL": "C"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def reference_cost(argv: list[str], repeats: int = 3) -> float:
    """Marginal CPU seconds per report (median of `repeats` pairs of runs: on a shared
    machine a single difference is noisy)."""
    return statistics.median(
        max(child_cpu(argv + [str(K2)]) - child_cpu(argv + [str(K1)]), 0.0) / (K2 - K1)
        for _ in range(repeats))


def our_tick_costs(n: int = 300) -> tuple[list[float], list[float], int]:
    sampler = LiveSampler(HostRoot("/"))
    prev = sampler.sample()
    sample_cpu, tick_cpu = [], []
    for _ in range(n):
        c0 = time.process_time()      # the sources are read in worker threads
        cur = sampler.sample()
        c1 = time.process_time()
        format_block(rates(prev, cur))
        c2 = time.process_time()
        sample_cpu.append(c1 - c0)
        tick_cpu.append(c2 - c0)
        prev = cur
        time.sleep(0.005)
    assert isinstance(cur.procs, dict), cur.procs   # this host's /proc lists its processes
    return sample_cpu, tick_cpu, len(cur.procs)


def bench_cost() -> None:
    sample_cpu, tick_cpu, nprocs = our_tick_costs()
    ours = statistics.median(tick_cpu)
    print(f"ours: one sample of everything ({nprocs} processes): median "
          f"{statistics.median(sample_cpu) * 1e3:.2f} ms CPU, best {min(sample_cpu) * 1e3:.2f} ms; "
          f"full tick with rates and text: median {ours * 1e3:.2f} ms")
    total = 0.0
    for name, argv in REFERENCE.items():
        cost = reference_cost(argv)
        total += cost
        ratio = ours / cost if cost else float("inf")
        print(f"{name:15s} {cost * 1e3:7.2f} ms CPU per report   ours/theirs {ratio:5.2f}")
    print(f"{'all four':15s} {total * 1e3:7.2f} ms CPU per report   ours/theirs "
          f"{ours / total if total else float('inf'):5.2f}")


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def bench_memory(minutes: float) -> bool:
    sampler = LiveSampler(HostRoot("/"))
    prev = sampler.sample()
    start = time.monotonic()
    marks: list[tuple[float, int, int]] = []
    next_mark = 60.0
    samples = 0
    while time.monotonic() - start < minutes * 60:
        cur = sampler.sample()
        rates(prev, cur)
        prev = cur
        samples += 1
        elapsed = time.monotonic() - start
        if elapsed >= next_mark or elapsed >= minutes * 60:
            gc.collect()
            marks.append((elapsed, rss_kib(), len(gc.get_objects())))
            print(f"  {elapsed / 60:5.1f} min  {samples:6d} samples  RSS {marks[-1][1]:7d} KiB  "
                  f"objects {marks[-1][2]}", flush=True)
            next_mark += 60.0
        time.sleep(0.1)
    if len(marks) < 2:
        return True
    growth = marks[-1][1] - marks[0][1]
    print(f"RSS growth after the first minute: {growth} KiB over {samples} samples")
    return growth <= 2048


def bench_processes(target: int = 1000, ticks: int = 20) -> None:
    """CPU per sample (the whole sample and its rates: processes table, users, command lines)
    with about `target` processes: sleepers are started up to that count."""
    have = sum(1 for e in os.listdir("/proc") if e.isdigit())
    sleepers = [subprocess.Popen(["sleep", "300"]) for _ in range(max(0, target - have))]
    try:
        n = sum(1 for e in os.listdir("/proc") if e.isdigit())
        sampler = LiveSampler(HostRoot("/"))
        prev = sampler.sample()
        costs = []
        for _ in range(ticks):
            t0 = time.process_time()
            cur = sampler.sample()
            rates(prev, cur)
            costs.append(time.process_time() - t0)
            prev = cur
        print(f"processes: {n} processes, {statistics.median(costs) * 1e3:.1f} ms CPU per "
              f"sample and rates (best {min(costs) * 1e3:.1f} ms): "
              f"{statistics.median(costs) * 100:.1f}% of a core at 1 Hz")
    finally:
        for p in sleepers:
            p.kill()
        for p in sleepers:
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--skip-long", action="store_true")
    args = ap.parse_args()
    bench_cost()
    bench_processes()
    if args.skip_long:
        return 0
    print(f"long run: {args.minutes:g} min at 10 Hz")
    return 0 if bench_memory(args.minutes) else 1


if __name__ == "__main__":
    sys.exit(main())
