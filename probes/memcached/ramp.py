"""Connection ramp: 32, 64, 128 ... connections up to a bound, a fixed time per step.

Each step opens its connections (timed), runs the closed loop for `step_s`, drains, closes, and
reads the server's counters between steps (not during: a server at its connection limit would
reject our stats connection too). The knee is the first step whose p99 grows by more than 2x
over the step before, or where errors start.

    ramp = MemcachedRamp(RampConfig(host, port, max_connections=4096))
    async for step in ramp: ...        # one McRampStep per step
    ramp.summary                       # RampSummary
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from inspector.probes.base import McTest, RunStatus
from inspector.probes.latency import LatencyRecorder
from inspector.probes.memcached.engine import Engine
from inspector.probes.memcached.latency import record_array
from inspector.probes.memcached.probe import (
    DEFAULT_PORT,
    ProbeError,
    ensure_nofile,
    final_reserve,
    flush_all,
    left_of,
    preload_keys,
)
from inspector.probes.memcached.stats import ServerStats, read_stats_async
from inspector.probes.memcached.target import TargetError, format_target, reach
from inspector.probes.memcached.workload import SizeRange, Workload, build_workload

P99_GROWTH = 2.0
TIMER_SLACK_S = 0.005          # a step is not started with less than this left of the deadline


def ramp_steps(start: int, maximum: int) -> list[int]:
    """start, 2*start, 4*start ... and the maximum itself as the last step."""
    if start < 1 or maximum < 1:
        raise ProbeError("connection counts must be at least 1")
    steps, n = [], min(start, maximum)
    while n < maximum:
        steps.append(n)
        n *= 2
    steps.append(maximum)
    return steps


@dataclass
class RampConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    start: int = 32
    max_connections: int = 4096
    step_s: float = 2.0
    test: McTest = McTest.SET
    set_ratio: float = 0.1
    key_count: int = 10000
    key_size: SizeRange = SizeRange(20, 60)
    value_size: SizeRange = SizeRange(50, 5000)
    flush: bool = False
    rate_per_conn: float | None = None
    connect_timeout_s: float = 3.0
    request_timeout_s: float = 2.0
    deadline_s: float = 600.0

    @property
    def target(self) -> str:
        return format_target(self.host, self.port)

    @property
    def set_fraction(self) -> float:
        return {"set": 1.0, "get": 0.0}.get(self.test, self.set_ratio)


@dataclass
class McRampStep:
    connections: int                 # asked for
    opened: int                      # connect() succeeded
    open_s: float                    # time to open them
    run_s: float                     # load time (first request to last reply)
    ops: int
    ops_per_s: float
    p50_ns: int | None
    p99_ns: int | None
    max_ns: int | None
    errors: dict[str, int]
    error_details: dict[str, str]
    server_rejected: int | None      # rejected_connections delta over the step
    server_listen_disabled: int | None
    server_curr_connections: int | None   # read after the step (connections already closed)

    @property
    def error_total(self) -> int:
        return sum(self.errors.values())


@dataclass
class RampSummary:
    target: str
    status: RunStatus                # completed | stopped | deadline | failed
    reason: str
    steps: list[McRampStep] = field(default_factory=list)
    knee_connections: int | None = None   # the named step
    knee_reason: str = ""
    p99_knee_connections: int | None = None
    errors_start_connections: int | None = None
    max_connections_server: int | None = None
    address: str | None = None            # the numeric address measured
    target_error: str | None = None       # resolve | connect_refused ...: nothing was measured


def find_knee(steps: list[McRampStep]) -> tuple[int | None, int | None, int | None, str]:
    """(named step, p99 knee, first step with errors, reason) over the steps run so far."""
    p99_knee = errors_start = None
    p99_reason = err_reason = ""
    previous: list[McRampStep | None] = [None, *steps[:-1]]
    for prev, cur in zip(previous, steps):
        if errors_start is None and cur.error_total:
            errors_start = cur.connections
            kinds = ", ".join(f"{k} x{v}" for k, v in sorted(cur.errors.items()))
            err_reason = f"errors start at {cur.connections} connections ({kinds})"
        if (p99_knee is None and prev is not None and prev.p99_ns and cur.p99_ns
                and cur.p99_ns > P99_GROWTH * prev.p99_ns):
            p99_knee = cur.connections
            p99_reason = (f"p99 grows {cur.p99_ns / prev.p99_ns:.1f}x from {prev.connections} "
                          f"to {cur.connections} connections "
                          f"({prev.p99_ns / 1e6:.2f} -> {cur.p99_ns / 1e6:.2f} ms)")
    candidates = [(c, r) for c, r in ((p99_knee, p99_reason), (errors_start, err_reason)) if c]
    if not candidates:
        return None, None, None, ""
    named = min(c for c, _ in candidates)
    reason = "; ".join(r for c, r in candidates if c == named)
    return named, p99_knee, errors_start, reason


class MemcachedRamp:
    """Async iterator of RampSteps; `summary` when it ends. `stop()` ends it at once."""

    def __init__(self, config: RampConfig):
        self.config = config
        self.host = config.host           # the resolved numeric address once the ramp runs
        self.steps_planned = ramp_steps(config.start, config.max_connections)
        self.summary: RampSummary | None = None
        self._engine: Engine | None = None
        self._preload = None              # the preload in progress, for stop()
        self._stopped = False
        self._queue: asyncio.Queue[McRampStep] = asyncio.Queue()   # the steps run, for __anext__
        self._task: asyncio.Task | None = None

    def __aiter__(self) -> MemcachedRamp:
        return self

    async def __anext__(self) -> McRampStep:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        task = self._task
        getter = asyncio.ensure_future(self._queue.get())
        try:
            await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            getter.cancel()
            task.cancel()
            raise
        if getter.done():
            return getter.result()
        getter.cancel()
        if not self._queue.empty():
            return self._queue.get_nowait()
        task.result()
        raise StopAsyncIteration

    async def run(self) -> RampSummary:
        async for _ in self:
            pass
        assert self.summary is not None     # set by the run as it ends
        return self.summary

    def stop(self) -> None:
        self._stopped = True
        if self._preload is not None:
            self._preload.cancel()
        if self._engine is not None:
            self._engine.close()

    async def _run(self) -> None:
        cfg = self.config
        summary = RampSummary(cfg.target, RunStatus.COMPLETED, "completed")
        self.summary = summary
        # the deadline bounds the whole ramp; its final reserve is for the last step's counters
        final_end = time.monotonic() + cfg.deadline_s
        hard_end = final_end - final_reserve(cfg.deadline_s)
        try:
            ensure_nofile(cfg.max_connections)
        except ProbeError as exc:
            summary.status, summary.reason = RunStatus.FAILED, str(exc)
            return
        try:
            addr = await reach(cfg.host, cfg.port, left_of(hard_end, cfg.connect_timeout_s))
        except TargetError as exc:
            summary.status, summary.reason, summary.target_error = RunStatus.FAILED, str(exc), exc.kind
            return
        summary.address = addr.display
        host = self.host = addr.host
        workload = await build_workload(cfg.key_count, cfg.key_size, cfg.value_size,
                                        hard_end - time.monotonic())
        if workload is None:
            summary.status, summary.reason = RunStatus.DEADLINE, "deadline reached while building the keys"
            return
        stats = await read_stats_async(host, cfg.port, left_of(hard_end, cfg.connect_timeout_s))
        if stats.values:
            summary.max_connections_server = stats.values.get("max_connections")
        try:
            if cfg.flush:
                await flush_all(host, cfg.port, left_of(hard_end, cfg.connect_timeout_s))
            if cfg.test in ("get", "mix") and not self._stopped:
                # like the load's: stop() cancels it, the deadline bounds it
                pre = await preload_keys(host, cfg.port, workload, cfg.request_timeout_s,
                                         bound_s=hard_end - time.monotonic(),
                                         started=lambda proto: setattr(self, "_preload", proto))
                self._preload = None
                if pre.error and not pre.stored:
                    raise OSError(pre.error)
        except (TimeoutError, OSError) as exc:
            summary.status, summary.reason = RunStatus.FAILED, f"before the ramp: {exc or 'timed out'}"
            return
        for n in self.steps_planned:
            if self._stopped:
                summary.status, summary.reason = RunStatus.STOPPED, "stopped by the user (partial figures)"
                break
            # uvloop's timers have millisecond resolution: a preload bounded by the deadline
            # can return a hair before it, and a step started then ran 0.2 ms for 2 requests
            if time.monotonic() >= hard_end - TIMER_SLACK_S:
                summary.status = RunStatus.DEADLINE
                summary.reason = f"deadline of {cfg.deadline_s:g} s reached"
                break
            step, after = await self._step(n, workload, stats, hard_end, final_end)
            stats = after
            summary.steps.append(step)
            await self._queue.put(step)
            (summary.knee_connections, summary.p99_knee_connections,
             summary.errors_start_connections, summary.knee_reason) = find_knee(summary.steps)
            if step.opened == 0 or step.ops == 0:
                summary.status = RunStatus.FAILED
                summary.reason = (f"no request succeeded at {n} connections: "
                                  + (", ".join(f"{k} ({v})" for k, v in step.error_details.items())
                                     or "no reply"))
                break
        if self._stopped and summary.status == RunStatus.COMPLETED:
            summary.status, summary.reason = RunStatus.STOPPED, "stopped by the user (partial figures)"

    async def _step(self, n: int, workload: Workload, before: ServerStats,
                    hard_end: float, final_end: float) -> tuple[McRampStep, ServerStats]:
        cfg = self.config
        engine = Engine(workload, cfg.set_fraction, None, cfg.rate_per_conn)
        self._engine = engine
        rec = LatencyRecorder()
        open_s = 0.0
        run_s = 0.0
        try:
            open_s = await asyncio.wait_for(
                engine.open(self.host, cfg.port, n, cfg.connect_timeout_s),
                left_of(hard_end, cfg.deadline_s))
        except TimeoutError:
            engine.close()
        if not engine.closing and engine.conns:
            t0 = time.perf_counter()
            end = min(time.monotonic() + cfg.step_s, hard_end)
            engine.stop_at_ns = time.perf_counter_ns() + int((end - time.monotonic()) * 1e9)
            engine.start()
            drain_end = None
            while not engine.done.is_set():
                now = time.monotonic()
                if drain_end is None and (now >= end or engine.stopping):
                    engine.stop_sending()
                    # replies in flight drain, but never past the deadline: a hard bound
                    drain_end = min(max(now, end) + cfg.request_timeout_s + 0.25, hard_end)
                if drain_end is not None and now >= drain_end:
                    engine.close()
                    break
                wake = drain_end if drain_end is not None else end   # not a tick later
                try:
                    await asyncio.wait_for(engine.done.wait(), left_of(wake, 0.25))
                except TimeoutError:
                    pass
                engine.check_timeouts(cfg.request_timeout_s)
                s_arr, g_arr = engine.take_latencies()
                record_array(rec, s_arr)
                record_array(rec, g_arr)
            run_s = time.perf_counter() - t0
        opened = len(engine.conns)
        engine.close()
        self._engine = None
        s_arr, g_arr = engine.take_latencies()
        record_array(rec, s_arr)
        record_array(rec, g_arr)
        await asyncio.sleep(0.05)   # let the server see the closes before counting connections
        after = await read_stats_async(
            self.host, cfg.port,
            left_of(final_end, cfg.connect_timeout_s, at_least=0.02))
        summ = rec.summary()

        def delta(name: str) -> int | None:
            a, b = after.get(name), before.get(name)
            return None if a is None or b is None else a - b

        step = McRampStep(
            connections=n, opened=opened, open_s=open_s, run_s=run_s, ops=rec.count,
            ops_per_s=rec.count / run_s if run_s else 0.0,
            p50_ns=summ.p("p50"), p99_ns=summ.p("p99"), max_ns=summ.max_ns,
            errors=dict(engine.errors), error_details=dict(engine.first_error),
            server_rejected=delta("rejected_connections"),
            server_listen_disabled=delta("listen_disabled_num"),
            server_curr_connections=after.get("curr_connections"))
        return step, after
