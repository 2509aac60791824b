"""sort_processes with a limit takes the top few without sorting every process: the same
processes in the same order as the full sort, ties broken by pid, for every key."""
from __future__ import annotations

import random

import pytest

from inspector.live.processes import ProcessRate, SortKey, sort_processes, top_processes


def _procs(n: int, rng: random.Random) -> list[ProcessRate]:
    out = []
    for pid in rng.sample(range(1, 10 * n), n):
        cpu = rng.choice([0.0, 0.0, 1.0, 2.5, rng.uniform(0, 200)])      # ties on purpose
        out.append(ProcessRate(pid, "p", "root", rng.choice("RSD"), cpu,
                               rng.choice([0, 100, 2048]), rng.choice([None, 0, 64]),
                               rng.choice([None, 0.0, 4096.0]), rng.choice([None, 0.0, 1.0]),
                               0.0, rng.choice([0.0, 0.0, 3.0]), 1, "p"))
    return out


@pytest.mark.parametrize("key", list(SortKey))
def test_the_top_few_are_the_full_sorts_first(key):
    rng = random.Random(26)
    for n in (0, 1, 5, 11, 300):
        procs = _procs(n, rng)
        full = sort_processes(procs, key)
        for limit in (0, 1, 3, 10, n + 5):
            assert sort_processes(procs, key, limit) == full[:limit]


def test_top_processes_keeps_each_keys_top_ten_by_cpu():
    procs = _procs(300, random.Random(7))
    kept = top_processes(procs)
    assert kept == sort_processes(kept, SortKey.CPU)
    for key in SortKey:
        value = {SortKey.CPU: lambda p: p.cpu_pct, SortKey.MEM: lambda p: p.mem_kib,
                 SortKey.IO: lambda p: p.io_bytes_s, SortKey.DSTATE: lambda p: p.dstate_s}[key]
        top = [p for p in sort_processes(procs, key)[:10] if value(p) > 0]
        assert all(p in kept for p in top)
