"""IO latency probe on real files: statistics against a known distribution (fake clock),
bounds (count, deadline), workers, cancellation, the ramp's knee, safety refusals."""
import asyncio
import math
import os
import random
import re
import statistics
import time
from pathlib import Path

import pytest

from inspector.probes.io.latency import (
    MIXED,
    WRITE,
    IoConfig,
    IoLatencyProbe,
    IoRamp,
    IoRampStep,
    find_knee,
    ramp_jobs,
    summarize_ramp,
)
from inspector.probes.io.stats import nearest_rank
from inspector.probes.io.target import TargetError, open_target

# the C request loop (the default) and the Python one (no compiler at install time)
both_loops = pytest.mark.parametrize("native", [True, False], ids=["c_loop", "python_loop"])


class FakeClock:
    """t0/t1 pairs whose differences are the given latencies (the worker reads the clock
    only around requests); a 1 us gap between requests."""

    def __init__(self, latencies):
        self.latencies = iter(latencies)
        self.now = 10**12
        self.inside = False

    def __call__(self):
        self.now += next(self.latencies) if self.inside else 1000
        self.inside = not self.inside
        return self.now


def test_statistics_match_a_known_distribution(data_file):
    rng = random.Random(11)
    timed = [int(rng.lognormvariate(13, 0.8)) + 1 for _ in range(3000)]   # ~2.4 s of fake time
    clock = FakeClock([777_777] + timed)       # the warm-up is excluded from statistics
    with open_target(data_file, direct=False) as target:
        probe = IoLatencyProbe(target, IoConfig(count=len(timed) + 1, clock=clock, seed=1))
        res = asyncio.run(probe.run_to_end())
    assert res.error is None and res.requests == len(timed) and res.warmups == 1
    lat = res.latency
    assert lat.min_ns == min(timed) and lat.max_ns == max(timed)
    assert lat.avg_ns is not None and lat.mdev_ns is not None
    assert math.isclose(lat.avg_ns, statistics.fmean(timed), rel_tol=1e-12)
    assert math.isclose(lat.mdev_ns, statistics.pstdev(timed), rel_tol=1e-9)   # ioping: pop.
    assert math.isclose(res.iops_mean, 1e9 * len(timed) / sum(timed), rel_tol=1e-12)
    ordered = sorted(timed)
    for q in (50, 90, 99, 99.9):
        exact = nearest_rank(ordered, q)
        assert abs(lat.percentiles_ns[f"p{q:g}"] - exact) <= exact * 0.001 + 1
    # the interval samples (4 per real second) cover every request exactly once
    assert sum(s.requests for s in res.samples) == len(timed)
    maxima = [s.stats.max_ns for s in res.samples if s.requests]
    assert None not in maxima and max(m for m in maxima if m is not None) == max(timed)
    assert res.samples[0].warmups_ns == [777_777]
    assert sum(c for _, c in res.histogram()) == len(timed)


@both_loops
def test_count_includes_one_warmup_per_worker_and_is_split(data_file, native):
    with open_target(data_file) as target:
        res = asyncio.run(IoLatencyProbe(target, IoConfig(count=101, jobs=3, native=native))
                          .run_to_end())
    assert res.error is None and res.loop == ("c" if native else "python")
    assert res.total_requests == 101 and res.warmups == 3 and res.requests == 98
    assert res.reads == 98 and res.writes == 0 and res.direct


@pytest.mark.serial
def test_deadline_bounds_the_run_and_samples_arrive_4_per_second(data_file):
    async def run():
        with open_target(data_file) as target:
            probe = IoLatencyProbe(target, IoConfig(deadline=0.6, jobs=2))
            stamps = []
            async for s in probe:
                stamps.append(s.t)
            return probe.result, stamps
    t0 = time.monotonic()
    res, stamps = asyncio.run(run())
    elapsed = time.monotonic() - t0
    assert res.error is None and res.requests > 0
    assert 0.55 <= res.wall_ns / 1e9 < 0.9 and elapsed < 2.0
    assert 2 <= len(stamps) <= 4                  # 0.25, 0.5 and the end
    assert stamps == sorted(stamps)


@both_loops
def test_cancel_stops_promptly_and_keeps_partial_results(data_file, native):
    async def run():
        with open_target(data_file) as target:
            probe = IoLatencyProbe(target, IoConfig(deadline=30, native=native))
            task = asyncio.ensure_future(probe.run_to_end())
            await asyncio.sleep(0.4)
            t = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return probe.result, time.monotonic() - t
    res, stop_time = asyncio.run(run())
    assert stop_time < 0.5
    assert res.interrupted and res.error is None and res.requests > 0
    assert res.latency.count == res.requests


@both_loops
def test_write_and_mixed_in_directory_leave_nothing_behind(tmp_path, native):
    before = set(os.listdir(tmp_path))
    for mode in (WRITE, MIXED):
        with open_target(str(tmp_path), write=True, working_set=1 << 20) as target:
            assert target.kind == "directory" and target.working_set == 1 << 20
            res = asyncio.run(IoLatencyProbe(target, IoConfig(mode=mode, count=200, seed=3,
                                                              native=native)).run_to_end())
        assert res.error is None and res.requests == 199
        if mode == WRITE:
            assert res.writes == 199 and res.reads == 0
        else:
            assert res.writes > 40 and res.reads > 40 and res.writes + res.reads == 199
    assert set(os.listdir(tmp_path)) == before


def test_writes_to_an_existing_file_are_refused(data_file):
    before = Path(data_file).read_bytes()
    with pytest.raises(TargetError, match="refusing to write to file"):
        open_target(data_file, write=True)
    # opened read-only: the probe refuses too
    with open_target(data_file) as target, pytest.raises(ValueError, match="refusing to write"):
        IoLatencyProbe(target, IoConfig(mode=WRITE, count=10))
    assert Path(data_file).read_bytes() == before


def test_missing_and_unreadable_targets(tmp_path, data_file):
    with pytest.raises(TargetError, match="no such file"):
        open_target(str(tmp_path / "nope"))
    os.chmod(data_file, 0o600)
    os.chown(data_file, 0, 0) if os.geteuid() == 0 else None
    if os.geteuid() == 0:
        os.seteuid(65534)                      # nobody: cannot read root's 0600 file
        try:
            with pytest.raises(TargetError, match="permission denied"):
                open_target(data_file)
        finally:
            os.seteuid(0)
    with pytest.raises(TargetError, match="request size 4096 is larger than"):
        small = tmp_path / "small"
        small.write_bytes(b"x" * 100)
        open_target(str(small))


@both_loops
def test_truncated_file_mid_run_reports_error_and_keeps_partial_results(tmp_path, native):
    path = tmp_path / "shrinks.bin"
    path.write_bytes(os.urandom(8 << 20))

    async def run():
        with open_target(str(path)) as target:
            probe = IoLatencyProbe(target, IoConfig(deadline=10, native=native))
            async for s in probe:
                if s.t > 0.3:
                    os.truncate(path, 4096)          # reads past 4 KiB now come back short
            return probe.result
    res = asyncio.run(run())
    assert res.error and "short read" in res.error and "shrink" in res.error
    assert re.search(r"short read at offset \d+ \(request \d+\): \d+ of 4096 bytes", res.error)
    assert res.requests > 0 and not res.interrupted
    assert res.wall_ns < 5e9


@both_loops
def test_sequential_offsets_walk_the_working_set(data_file, native):
    with open_target(data_file, working_set=64 << 10) as target:
        res = asyncio.run(IoLatencyProbe(target, IoConfig(count=40, sequential=True,
                                                          native=native)).run_to_end())
    assert res.error is None and res.requests == 39


def test_ramp_steps_and_knee(data_file):
    assert ramp_jobs(1) == [1] and ramp_jobs(4) == [1, 2, 4] and ramp_jobs(6) == [1, 2, 4, 6]

    def step(jobs, iops, p99, avg=None):
        return IoRampStep(jobs, iops, p99, avg or p99 / 2,
                          result=None)  # type: ignore[arg-type]  # the knee never reads the run
    # IOPS doubles while p99 grows slowly, then IOPS +10% for p99 x2: knee at 2 workers
    steps = [step(1, 10_000, 100), step(2, 19_000, 110), step(4, 21_000, 220)]
    knee = find_knee(steps)
    assert knee is not None and knee.jobs == 2
    r = summarize_ramp(steps)
    assert r.max_iops is not None and r.min_latency is not None
    assert r.max_iops.jobs == 4 and r.min_latency.jobs == 1
    knee = find_knee(steps[:2])
    assert knee is not None and knee.jobs == 2          # never grew faster: the last step

    async def run():
        with open_target(data_file) as target:
            ramp = IoRamp(target, IoConfig(deadline=1), max_jobs=2, step_seconds=0.2)
            jobs_seen = {s.jobs async for s in ramp}
            return ramp.result, jobs_seen
    result, jobs_seen = asyncio.run(run())
    assert jobs_seen == {1, 2} and [s.jobs for s in result.steps] == [1, 2]
    assert all(s.iops > 0 and s.p99_ns for s in result.steps) and result.knee is not None


def test_config_needs_a_bound_and_sane_values():
    for bad in (IoConfig(), IoConfig(count=1, jobs=2), IoConfig(deadline=-1),
                IoConfig(count=5, mode="append"),  # type: ignore[arg-type]  # refused by validate()
                IoConfig(count=5, jobs=0)):
        with pytest.raises(ValueError):
            bad.validate()
