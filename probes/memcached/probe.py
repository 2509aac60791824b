"""memcached stress probe: memslap-class load with percentiles, server counters and samples.

    probe = MemcachedProbe(MemcachedLoad(host, port, concurrency=32, execute_number=50000))
    async for sample in probe:          # 4 Hz interval samples, for live charts
        ...
    summary = probe.summary             # ProbeSummary, also on error or stop()

Bounded always: a hard deadline, a connect timeout and a per-request timeout; `stop()` (Ctrl-C)
ends the run at once with partial figures; cancelling the iterating task cancels the run.
The connection ramp lives in mc_ramp.py.
"""
from __future__ import annotations

import asyncio
import os
import resource
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter_ns
from typing import cast

# ProbeError: the one error of every probe (re-exported)
from inspector.probes.base import McTest, ProbeError, RunStatus
from inspector.probes.latency import LatencyRecorder, LatencySummary
from inspector.probes.memcached.engine import ERROR_LABELS, Engine
from inspector.probes.memcached.latency import record_array, sorted_percentiles
from inspector.probes.memcached.stats import ServerCounters, ServerStats, compare, read_stats_async
from inspector.probes.memcached.target import Address, TargetError, format_target, reach
from inspector.probes.memcached.workers import EnginePool
from inspector.probes.memcached.workload import (
    MAX_KEY_BYTES,
    MAX_VALUE_BYTES,
    SizeRange,
    Workload,
    build_workload,
)

DEFAULT_PORT = 11211
TESTS = tuple(McTest)
SAMPLE_INTERVAL_S = 0.25
NOFILE_SLACK = 64          # descriptors beyond the connections: stats, flush, python, stdio
MAX_SAMPLES_QUEUED = 4 * 600
DEFER_MAX_VALUES = 2_000_000   # 16 MB of raw latencies at most before they are recorded
# past that bound, the oldest are recorded a step at a time between the loop's I/O: all 2 M at
# once held the loop ~0.75 s, ~25 s into a run at 80k ops/s, and showed as a 750 ms max latency
RECORD_STEP_VALUES = 4096      # ~1.5 ms of the loop per step
# The deadline bounds the whole run: every wait (resolve, connect, stats, flush, preload, load)
# gets at most what is left of it, and its last FINAL_RESERVE_S (a tenth of it at most) are
# kept for what follows the load: worker processes' last figures and the server's counters
# (a healthy server answers `stats` in a millisecond; a silent one costs what is left, not
# the connect timeout).
FINAL_RESERVE_S = 0.2
# The workload holds every key and its requests in memory (tests/bench/bench_memcached.py
# prints the bytes per key) and is built before the deadline is watched: -e 10000000 used to
# mean 10 M keys, gigabytes built before the run could begin.
DEFAULT_MAX_KEYS = 100_000     # the default key count (the execute number) stops here
MAX_KEY_COUNT = 1_000_000      # --key-count beyond this is refused (hundreds of MB)


def max_workers() -> int:
    """Load processes beyond the cores add no CPU, only memory (each a Python interpreter with
    its own workload; tests/bench/bench_memcached.py prints one's RSS): --workers 4096 would
    have started 4096 of them on the host."""
    return max(2, os.cpu_count() or 1)


@dataclass
class MemcachedLoad:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    concurrency: int = 32
    execute_number: int | None = None     # requests per connection (memslap's -e)
    duration_s: float | None = None       # or run for this long
    test: McTest = McTest.SET             # set | get | mix
    set_ratio: float = 0.1                # for mix: fraction of sets (memaslap's 1:9)
    key_count: int | None = None          # default: execute_number (like memcslap) up to
                                          # DEFAULT_MAX_KEYS, else 10000
    key_size: SizeRange = SizeRange(20, 60)       # memcslap's key lengths
    value_size: SizeRange = SizeRange(50, 5000)   # memcslap's value lengths
    flush: bool = False
    rate_per_conn: float | None = None    # requests/s per connection; None = closed loop
    connect_timeout_s: float = 3.0
    request_timeout_s: float = 2.0
    deadline_s: float = 600.0             # hard bound on the whole run
    sample_interval_s: float = SAMPLE_INTERVAL_S
    workers: int = 1                      # load processes (see mc_workers: more CPU, more share)
    preload: bool = True                  # get/mix: store the keys first; False makes a get
                                          # test read-only (every get a miss: round trips only)

    def validate(self) -> None:
        if self.test not in TESTS:
            raise ProbeError(f"test must be one of {', '.join(TESTS)}, got {self.test!r}")
        if self.concurrency < 1:
            raise ProbeError("concurrency must be at least 1")
        if self.execute_number is not None and self.duration_s is not None:
            raise ProbeError("give an execute number or a duration, not both")
        if self.execute_number is not None and self.execute_number < 1:
            raise ProbeError("execute number must be at least 1")
        if self.duration_s is not None and self.duration_s <= 0:
            raise ProbeError("duration must be positive")
        if not 0.0 <= self.set_ratio <= 1.0:
            raise ProbeError("set ratio must be within 0..1")
        if self.rate_per_conn is not None and self.rate_per_conn <= 0:
            raise ProbeError("rate must be positive")
        if self.key_size.hi > MAX_KEY_BYTES or self.key_size.lo < 1:
            raise ProbeError(f"key size must be within 1..{MAX_KEY_BYTES} bytes")
        if self.value_size.hi > MAX_VALUE_BYTES or self.value_size.lo < 0:
            raise ProbeError(f"value size must be within 0..{MAX_VALUE_BYTES} bytes")
        if self.key_count is not None and not 1 <= self.key_count <= MAX_KEY_COUNT:
            raise ProbeError(f"key count must be within 1..{MAX_KEY_COUNT} (every key is held in "
                             "memory)")
        if not 1 <= self.workers <= self.concurrency:
            raise ProbeError("workers must be within 1..concurrency")
        if self.workers > max_workers():
            raise ProbeError(f"--workers {self.workers}: at most {max_workers()} on this host "
                             f"(one load process per core, {os.cpu_count()} cores)")
        if self.deadline_s <= 0 or self.request_timeout_s <= 0 or self.connect_timeout_s <= 0:
            raise ProbeError("timeouts and deadline must be positive")

    @property
    def effective_execute_number(self) -> int | None:
        if self.duration_s is not None:
            return None
        return self.execute_number if self.execute_number is not None else 10000

    @property
    def effective_workers(self) -> int:
        return self.workers

    @property
    def effective_key_count(self) -> int:
        if self.key_count:
            return self.key_count
        return min(self.effective_execute_number or 10000, DEFAULT_MAX_KEYS)

    @property
    def set_fraction(self) -> float:
        return {"set": 1.0, "get": 0.0}.get(self.test, self.set_ratio)

    @property
    def target(self) -> str:
        return format_target(self.host, self.port)


# --- RLIMIT_NOFILE ---------------------------------------------------------------------------
def nofile_needed(connections: int) -> int:
    return connections + NOFILE_SLACK


def ensure_nofile(connections: int) -> None:
    """Raise the soft (and, as root, the hard) limit; ProbeError naming the number if we can't."""
    needed = nofile_needed(connections)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        new_hard = hard if hard == resource.RLIM_INFINITY or hard >= needed else needed
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed, new_hard))
        except (ValueError, OSError):
            raise ProbeError(
                f"{connections} connections need {needed} open files but the hard limit "
                f"RLIMIT_NOFILE is {hard}: raise it (ulimit -Hn {needed}, LimitNOFILE=) "
                f"or use at most {max(hard - NOFILE_SLACK, 0)} connections") from None


# --- results ---------------------------------------------------------------------------------
@dataclass
class LoadSample:
    """One interval (4 Hz) for live charts. Latencies are exact over the interval."""
    t_s: float                       # end of the interval, seconds since the load started
    interval_s: float
    ops: dict[str, int]              # {"set": n, "get": n} replies in the interval
    ops_per_s: float
    # {"set": {"p50":..,"p90":..,"p99":..,"p99.9":..,"max":..,"avg":..}}
    latency_ns: dict[str, dict[str, int]]
    errors: dict[str, int]           # new errors in the interval, by kind
    connections: int                 # open connections at the end of the interval
    in_flight: int


@dataclass
class OpResult:
    sent: int
    ok: int
    failed: int                      # answered with an error line
    ops_per_s: float
    latency: LatencySummary


@dataclass
class Preload:
    keys: int
    sent: int
    stored: int
    seconds: float
    error: str | None = None
    replies: int = 0
    rejected: int = 0


@dataclass
class ProbeSummary:
    target: str
    test: McTest
    concurrency: int
    workers: int
    execute_number: int | None
    duration_s: float | None
    key_count: int
    key_size: str
    value_size: str
    status: RunStatus                # completed | stopped | deadline | failed
    reason: str                      # one line: why it ended (or what went wrong)
    started_at: float                # unix time
    connections_opened: int
    open_s: float                    # time to open the connections
    load_s: float                    # first request to last reply
    ops_total: int
    ops_per_s: float
    ops: dict[str, OpResult]
    get_hits: int
    get_misses: int
    errors: dict[str, int]
    error_details: dict[str, str]    # the first message of each kind
    flushed: bool
    preload: Preload | None
    server: ServerCounters | None
    samples: int = 0
    address: str | None = None       # the numeric address measured ([::1]:11211)
    target_error: str | None = None  # set when the target could not be used at all (resolve,
                                     # connect_refused...): nothing was measured
    connections_failed: int = 0      # of connections_opened: turned away or died mid-run

    @property
    def error_total(self) -> int:
        return sum(self.errors.values())


def error_label(kind: str) -> str:
    return ERROR_LABELS.get(kind, kind)


def error_text(kind: str, detail: str) -> str:
    """The label and the first message, the message left out when the label already says it
    ("server: ERROR Too many open connections", not that twice)."""
    label = error_label(kind)
    return f"{label}: {detail}" if detail and detail.strip() not in label else label


# --- helpers on the wire that are not the hot path -------------------------------------------
async def _one_shot(host: str, port: int, payload: bytes, expect: bytes, timeout: float) -> None:
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        writer.write(payload)
        line = await asyncio.wait_for(reader.readline(), timeout)
        if line != expect:
            raise OSError(f"unexpected reply {line[:80]!r}" if line else
                          "server closed the connection")
    finally:
        writer.close()


async def flush_all(host: str, port: int, timeout: float = 3.0) -> None:
    await _one_shot(host, port, b"flush_all\r\n", b"OK\r\n", timeout)


class _SetRequests:
    """The preload's set requests, encoded a window at a time: a list of them all would hold
    every value at once (key count x value size: gigabytes past the workload's pre-encoding
    budget)."""

    def __init__(self, workload: Workload):
        self.workload = workload

    def __len__(self) -> int:
        return self.workload.key_count

    def __getitem__(self, window: slice) -> list[bytes]:
        return [self.workload.set_request(i) for i in range(*window.indices(len(self)))]


class _PreloadProtocol(asyncio.Protocol):
    """Pipelined sets in windows: the keys exist before a get or mix test (like memcslap)."""

    def __init__(self, requests: _SetRequests, window: int = 256):
        self.requests, self.window = requests, window
        self.next = 0
        self.pending = 0
        self.stored = 0
        self.sent = 0
        self.replies = 0
        self.rejected = 0      # SERVER_ERROR/CLIENT_ERROR: not counted in cmd_set by memcached
        self.buf = b""
        self.error: str | None = None
        self.done = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)   # uvloop's is not a subclass
        self._send_window()

    def _send_window(self) -> None:
        end = min(self.next + self.window, len(self.requests))
        if self.next >= end:
            if not self.done.done():
                self.done.set_result(None)
            return
        assert self.transport is not None      # windows go out once connected
        self.transport.write(b"".join(self.requests[self.next:end]))
        self.pending = end - self.next
        self.sent += self.pending
        self.next = end

    def data_received(self, data: bytes) -> None:
        data = self.buf + data
        lines = data.split(b"\r\n")
        self.buf = lines.pop()
        for line in lines:
            self.pending -= 1
            self.replies += 1
            if line.startswith((b"SERVER_ERROR", b"CLIENT_ERROR")):
                self.rejected += 1
            if line == b"STORED":
                self.stored += 1
            elif self.error is None:
                self.error = line.decode("latin-1")[:200]
                if line.startswith(b"ERROR Too many") and self.transport is not None:
                    self.transport.abort()
                    return
        if self.pending <= 0:
            self._send_window()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError(str(exc) if exc else "closed by server"))

    def cancel(self) -> None:
        """Stop now (Ctrl-C): what is stored so far stays counted."""
        self.error = self.error or "stopped by the user"
        if not self.done.done():
            self.done.set_result(None)
        if self.transport is not None:
            self.transport.abort()


async def preload_keys(host: str, port: int, workload: Workload, timeout: float,
                       bound_s: float | None = None,
                       started: Callable[[_PreloadProtocol], None] | None = None) -> Preload:
    """Store every key (pipelined). The wait is `timeout` plus 1 s per 5000 keys, at most
    `bound_s` (what is left of the run's deadline); `started(proto)` lets a stop cancel it."""
    loop = asyncio.get_running_loop()
    proto = _PreloadProtocol(_SetRequests(workload))
    if started is not None:
        started(proto)
    start = perf_counter_ns()
    try:
        transport, _ = await asyncio.wait_for(
            loop.create_connection(lambda: proto, host, port), timeout)
    except (TimeoutError, OSError) as exc:
        return Preload(workload.key_count, 0, 0, 0.0, f"preload connect: {exc or 'timed out'}")
    error = None
    wait = timeout + workload.key_count / 5000
    if bound_s is not None:
        wait = max(0.1, min(wait, bound_s))
    try:
        await asyncio.wait_for(proto.done, wait)
    except (TimeoutError, OSError) as exc:
        error = f"preload: {str(exc) or 'timed out'}"
    finally:
        transport.abort()
    return Preload(workload.key_count, proto.sent, proto.stored,
                   (perf_counter_ns() - start) / 1e9, error or proto.error,
                   proto.replies, proto.rejected)


# --- the probe -------------------------------------------------------------------------------
class MemcachedProbe:
    """Async iterator of Samples; `summary` once the iteration ends (also after stop/errors)."""

    def __init__(self, load: MemcachedLoad):
        load.validate()
        self.load = load
        self.summary: ProbeSummary | None = None
        self._queue: deque[LoadSample] = deque(maxlen=MAX_SAMPLES_QUEUED)
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._stop_requested = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: Engine | EnginePool | None = None
        self._preload: _PreloadProtocol | None = None
        self.total = {"set": LatencyRecorder(), "get": LatencyRecorder()}
        # raw latencies waiting to enter `total`: recorded after the load (or when the backlog
        # passes DEFER_MAX_VALUES), so the histogram's cost does not compete with the load
        self._deferred: dict[str, list[array]] = {"set": [], "get": []}
        self._deferred_count = 0
        self._recording_steps = False     # a backlog step is scheduled on the loop
        self.sample_count = 0

    # iteration ---------------------------------------------------------------------------------
    def __aiter__(self) -> MemcachedProbe:
        return self

    def _ensure_started(self) -> tuple[asyncio.Task, asyncio.Event]:
        if self._task is None or self._wake is None:
            self._loop = asyncio.get_running_loop()
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())
        return self._task, self._wake

    async def __anext__(self) -> LoadSample:
        task, wake = self._ensure_started()
        while True:
            if self._queue:
                return self._queue.popleft()
            if task.done():
                task.result()       # re-raise an unexpected failure of the run
                raise StopAsyncIteration
            wake.clear()
            try:
                await wake.wait()
            except asyncio.CancelledError:
                task.cancel()
                raise

    async def run(self) -> ProbeSummary:
        """Drive the probe to its end, discarding samples; returns the summary."""
        async for _ in self:
            pass
        assert self.summary is not None     # set by the run as it ends
        return self.summary

    def stop(self) -> None:
        """End at once (Ctrl-C): abandon in-flight requests, keep the partial figures.
        Safe to call from another thread (a TUI's UI thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:
                loop.call_soon_threadsafe(self._stop_now)
                return
        self._stop_now()

    def _stop_now(self) -> None:
        self._stop_requested = True
        if self._preload is not None:
            self._preload.cancel()
        if self._engine is not None:
            self._engine.close()
        if self._wake is not None:
            self._wake.set()

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    def _emit(self, sample: LoadSample) -> None:
        self._queue.append(sample)
        self.sample_count += 1
        if self._wake is not None:      # set before the run starts emitting
            self._wake.set()

    # the run -----------------------------------------------------------------------------------
    async def _run(self) -> None:
        state = _RunState()
        started_at = time.time()
        try:
            await self._run_phases(state, started_at)
        except asyncio.CancelledError:
            if self._engine is not None:
                self._engine.close()
                if isinstance(self._engine, EnginePool):
                    asyncio.ensure_future(self._engine.shutdown())
            self.summary = self._summarise(state, started_at, ServerStats(None, "not read: cancelled"))
            raise
        except Exception as exc:   # a bug must end the run with its reason, never hang or vanish
            state.fail(f"probe error: {type(exc).__name__}: {exc}")
            if self._engine is not None:
                self._engine.close()
                if isinstance(self._engine, EnginePool):
                    await self._engine.shutdown()      # no worker process outlives the run
            self.summary = self._summarise(state, started_at, ServerStats(None, "not read: probe error"))
        finally:
            # consumers waiting in __anext__ always wake and see the end (or the error)
            if self._wake is not None:
                self._wake.set()

    async def _run_phases(self, state: _RunState, started_at: float) -> None:
        load = self.load
        t_begin = time.monotonic()
        hard_end = t_begin + load.deadline_s
        load_end = hard_end - final_reserve(load.deadline_s)
        try:
            ensure_nofile(load.concurrency)
            # one lookup and one test connection: a bad name or a closed port is one clear line
            addr = await reach(load.host, load.port, left_of(load_end, load.connect_timeout_s))
            state.address = addr
            host = addr.host
            workload = await build_workload(load.effective_key_count, load.key_size,
                                            load.value_size, load_end - time.monotonic())
            if workload is None:
                raise _DeadlineReached("deadline reached while building the keys")
            state.before = await read_stats_async(host, load.port,
                                                  left_of(load_end, load.connect_timeout_s))
            if load.flush:
                try:
                    await flush_all(host, load.port, left_of(load_end, load.connect_timeout_s))
                    state.flushed = True
                except (TimeoutError, OSError) as exc:
                    state.fail(f"flush_all failed: {exc or 'timed out'}")
            if (not state.failed and load.test in ("get", "mix") and load.preload
                    and not self._stop_requested):
                state.preload = await preload_keys(
                    host, load.port, workload, load.request_timeout_s,
                    bound_s=load_end - time.monotonic(),
                    started=lambda proto: setattr(self, "_preload", proto))
                self._preload = None
                if state.preload.error and state.preload.stored == 0:
                    state.fail(state.preload.error)
            if not state.failed and not self._stop_requested:
                try:
                    await self._load_phase(workload, state, load_end, host, hard_end)
                finally:
                    if isinstance(state.engine, EnginePool):
                        # it waits up to its timeout twice: reports, then processes
                        await state.engine.shutdown(timeout=left_of(hard_end, 3.0) / 2)
            elif self._stop_requested:
                state.status, state.reason = RunStatus.STOPPED, "stopped before the load started"
        except TargetError as exc:
            state.fail(str(exc))
            state.target_error = exc.kind
        except _DeadlineReached as exc:
            state.status, state.reason = RunStatus.DEADLINE, str(exc)
        except ProbeError as exc:
            state.fail(str(exc))
        after = ServerStats(None, "not read: no stats before")
        if (state.before is not None and state.before.values is not None
                and state.address is not None):
            after = await read_stats_async(
                state.address.host, load.port,
                left_of(hard_end, load.connect_timeout_s, at_least=0.02))
        self.summary = self._summarise(state, started_at, after)

    async def _load_phase(self, workload: Workload, state: _RunState, hard_end: float,
                          host: str, final_end: float) -> None:
        """The load until `hard_end` (the deadline less its final reserve, which ends at
        `final_end`)."""
        load = self.load
        workers = load.effective_workers
        engine: Engine | EnginePool
        if workers > 1:
            engine = EnginePool(load, workers)
        else:
            engine = Engine(workload, load.set_fraction, load.effective_execute_number,
                            load.rate_per_conn)
        self._engine = engine
        state.engine = engine
        open_budget = left_of(hard_end, load.deadline_s)
        try:
            state.open_s = await asyncio.wait_for(
                engine.open(host, load.port, load.concurrency, load.connect_timeout_s),
                open_budget)
        except TimeoutError:
            state.close(engine)
            state.status, state.reason = RunStatus.DEADLINE, "deadline reached while connecting"
            return
        if self._stop_requested:
            state.close(engine)
            state.status, state.reason = RunStatus.STOPPED, "stopped while connecting"
            return
        if not engine.opened_count() or engine.open_connections() == 0:
            state.close(engine)
            state.fail(_first_error_line(engine) or "no connection could be opened")
            return
        t0 = perf_counter_ns()
        state.t0 = t0
        if load.duration_s and isinstance(engine, Engine):
            engine.stop_at_ns = t0 + int(load.duration_s * 1e9)
        engine.start()
        duration_end = (time.monotonic() + load.duration_s) if load.duration_s else None
        step = load.sample_interval_s
        next_tick = time.monotonic() + step
        last_tick_ns = t0
        last_errors = dict(engine.errors)
        closed_at = None
        while True:
            now = time.monotonic()
            wait = max(0.0, min(next_tick, hard_end) - now)
            if not engine.done.is_set():
                try:
                    await asyncio.wait_for(engine.done.wait(), wait)
                except TimeoutError:
                    pass
            now_ns = perf_counter_ns()
            now = time.monotonic()
            finished = engine.done.is_set()
            if finished and state.t_end is None:
                state.t_end = now_ns
            if finished or now >= next_tick - 0.002:
                engine.check_timeouts(load.request_timeout_s)
                last_errors = self._sample(engine, t0, last_tick_ns, now_ns, last_errors)
                last_tick_ns = now_ns
                next_tick = now + step
            if finished:
                break
            if duration_end is not None and now >= duration_end and not engine.stopping:
                engine.stop_sending()       # in-flight replies drain, bounded by the timeout
            if self._stop_requested and closed_at is None:
                closed_at = now
            if now >= hard_end and closed_at is None:
                state.status = RunStatus.DEADLINE
                state.reason = f"deadline of {load.deadline_s:g} s reached"
                state.close(engine)
                closed_at = now
            if closed_at is not None:
                # closed: only the final reports of worker processes are awaited, briefly
                # (at the deadline, within its final reserve: it is a hard bound)
                drain = (max(0.0, (final_end - closed_at) / 2) if state.status == RunStatus.DEADLINE
                         else 3.0)
                hard_end = max(hard_end, closed_at + drain)   # keeps the waits above zero
                if now >= closed_at + drain:
                    break
        if state.t_end is None:
            state.t_end = perf_counter_ns()
        if self._stop_requested and state.status == RunStatus.COMPLETED:
            state.status, state.reason = RunStatus.STOPPED, "stopped by the user (partial figures)"
        elif state.status == RunStatus.COMPLETED:
            self._judge_end(engine, state)
        state.close(engine)          # the run is over: release the connections (and their fds)
        await asyncio.sleep(0.05)   # let the closes reach the server before its counters are read

    def _judge_end(self, engine: Engine | EnginePool, state: _RunState) -> None:
        dead = engine.dead_count()
        opened = engine.opened_count()
        ok = engine.ok_set + engine.ok_get
        if dead and dead == opened:
            state.fail(f"all {dead} connections failed: {_first_error_line(engine)}")
        elif dead:
            state.reason = (f"{dead} of {opened} connections failed: "
                            f"{_first_error_line(engine)}")
            state.status = RunStatus.FAILED if ok == 0 else RunStatus.COMPLETED
        elif engine.errors:
            state.reason = f"completed with errors: {_first_error_line(engine)}"
        else:
            state.reason = "completed"

    def _sample(self, engine: Engine | EnginePool, t0: int, last_ns: int, now_ns: int,
                last_errors: dict[str, int]) -> dict[str, int]:
        s_arr, g_arr = engine.take_latencies()
        self._defer(s_arr, g_arr)
        interval = max((now_ns - last_ns) / 1e9, 1e-9)
        ops = {"set": len(s_arr), "get": len(g_arr)}
        errors_now = dict(engine.errors)
        new_errors = {k: v - last_errors.get(k, 0) for k, v in errors_now.items()
                      if v - last_errors.get(k, 0)}
        self._emit(LoadSample(
            t_s=(now_ns - t0) / 1e9, interval_s=interval, ops=ops,
            ops_per_s=(ops["set"] + ops["get"]) / interval,
            latency_ns={k: sorted_percentiles(a) for k, a in (("set", s_arr), ("get", g_arr)) if a},
            errors=new_errors, connections=engine.open_connections(),
            in_flight=engine.in_flight()))
        return errors_now

    def _defer(self, s_arr: array, g_arr: array) -> None:
        for name, arr in (("set", s_arr), ("get", g_arr)):
            if arr:
                self._deferred[name].append(arr)
                self._deferred_count += len(arr)
        if self._deferred_count > DEFER_MAX_VALUES and not self._recording_steps:
            self._recording_steps = True
            asyncio.get_running_loop().call_soon(self._record_backlog_step)

    def _record_backlog_step(self) -> None:
        """Record the oldest RECORD_STEP_VALUES raw latencies; again on the next loop turn
        while the backlog is above its bound (the replies in between are handled first)."""
        budget = RECORD_STEP_VALUES
        for name, arrays in self._deferred.items():
            while arrays and budget > 0:
                arr = arrays[0]
                if len(arr) <= budget:
                    arrays.pop(0)
                    record_array(self.total[name], arr)
                    taken = len(arr)
                else:
                    record_array(self.total[name], arr[:budget])
                    del arr[:budget]
                    taken = budget
                budget -= taken
                self._deferred_count -= taken
        if self._deferred_count > DEFER_MAX_VALUES - RECORD_STEP_VALUES:
            asyncio.get_running_loop().call_soon(self._record_backlog_step)
        else:
            self._recording_steps = False

    def _record_deferred(self) -> None:
        for name, arrays in self._deferred.items():
            for arr in arrays:
                record_array(self.total[name], arr)
            arrays.clear()
        self._deferred_count = 0

    def _summarise(self, state: _RunState, started_at: float, after: ServerStats) -> ProbeSummary:
        load = self.load
        engine = state.engine
        if engine is not None:
            s_arr, g_arr = engine.take_latencies()   # anything after the last sample
            self._defer(s_arr, g_arr)
        self._record_deferred()
        load_s = ((state.t_end or perf_counter_ns()) - state.t0) / 1e9 if state.t0 else 0.0
        ops: dict[str, OpResult] = {}
        for name in ("set", "get"):
            rec = self.total[name]
            sent = getattr(engine, f"sent_{name}", 0) if engine else 0
            failed = getattr(engine, f"failed_{name}", 0) if engine else 0
            if sent or rec.count:
                ops[name] = OpResult(sent, rec.count, failed,
                                     rec.count / load_s if load_s else 0.0, rec.summary())
        total_ok = sum(o.ok for o in ops.values())
        errors = dict(engine.errors) if engine else {}
        details = dict(engine.first_error) if engine else {}
        if state.target_error:
            errors[state.target_error] = errors.get(state.target_error, 0) + 1
            details.setdefault(state.target_error, state.reason)
        server = None
        if state.before is not None:
            pre_sent = state.preload.sent if state.preload else 0
            pre_ans = state.preload.replies if state.preload else 0
            sent = {"cmd_set": pre_sent + (engine.sent_set if engine else 0),
                    "cmd_get": engine.sent_get if engine else 0}
            answered = {"cmd_set": pre_ans, "cmd_get": 0}
            uncounted = {"cmd_set": state.preload.rejected if state.preload else 0}
            if engine is not None:   # replies, errors included; not the requests lost unanswered
                answered["cmd_set"] += engine.ok_set + engine.failed_set - engine.lost_set
                answered["cmd_get"] += engine.ok_get + engine.failed_get - engine.lost_get
                uncounted["cmd_set"] += engine.rejected_set
                uncounted["cmd_get"] = engine.rejected_get
            if engine is not None and engine.sent_get:
                sent["get_hits+get_misses"] = engine.sent_get
                answered["get_hits+get_misses"] = engine.get_hits + engine.get_misses
            server = compare(state.before, after, sent, answered, uncounted)
        return ProbeSummary(
            target=load.target, test=load.test, concurrency=load.concurrency,
            workers=load.effective_workers,
            execute_number=load.effective_execute_number, duration_s=load.duration_s,
            key_count=load.effective_key_count, key_size=str(load.key_size),
            value_size=str(load.value_size), status=state.status, reason=state.reason,
            started_at=started_at,
            connections_opened=engine.opened_count() if engine else 0, open_s=state.open_s,
            load_s=load_s, ops_total=total_ok, ops_per_s=total_ok / load_s if load_s else 0.0,
            ops=ops, get_hits=engine.get_hits if engine else 0,
            get_misses=engine.get_misses if engine else 0,
            errors=errors, error_details=details,
            flushed=state.flushed, preload=state.preload, server=server,
            samples=self.sample_count,
            address=state.address.display if state.address else None,
            target_error=state.target_error,
            connections_failed=state.connections_failed or 0)


class _DeadlineReached(Exception):
    """The deadline came before the load could start; the message says during what."""


def final_reserve(deadline_s: float) -> float:
    return min(FINAL_RESERVE_S, deadline_s / 10)


def left_of(hard_end: float, cap: float, at_least: float = 0.001) -> float:
    """Seconds a step may wait: `cap`, cut to what is left before `hard_end` (but at least
    `at_least`: asyncio treats a timeout of 0 as already expired)."""
    return max(at_least, min(cap, hard_end - time.monotonic()))


def _first_error_line(engine: Engine | EnginePool) -> str:
    if not engine.errors:
        return ""
    kind, count = engine.errors.most_common(1)[0]
    detail = engine.first_error.get(kind, "")
    label = error_label(kind)
    return f"{label} x{count}" + (f" ({detail})" if detail and detail.strip() not in label else "")


@dataclass
class _RunState:
    status: RunStatus = RunStatus.COMPLETED
    reason: str = ""
    before: ServerStats | None = None
    flushed: bool = False
    preload: Preload | None = None
    engine: Engine | EnginePool | None = None
    open_s: float = 0.0
    t0: int = 0
    t_end: int | None = None
    failed: bool = False
    address: Address | None = None
    target_error: str | None = None    # resolve | connect_refused | ... (the run never started)

    connections_failed: int | None = None   # counted before the close kills them all

    def close(self, engine: Engine | EnginePool) -> None:
        if self.connections_failed is None:
            self.connections_failed = engine.dead_count()
        engine.close()

    def fail(self, reason: str) -> None:
        self.status, self.reason, self.failed = RunStatus.FAILED, reason, True
