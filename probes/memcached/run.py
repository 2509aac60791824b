"""The memcached probe behind the probe interface (probes.base): config, run, summary.

McRunConfig is what `probe memcached` fills from its options and what a request
(`--probe memcached:HOST:PORT`, the TUI's form) becomes: a request without `write` is a
read-only get test (gets of keys the server does not hold: nothing is stored or evicted),
with `write` a set test. McRun drives the load (memcached.MemcachedProbe) or, with `ramp`, the
connection ramp (mc_ramp.MemcachedRamp)."""
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import ClassVar

from inspector.probes.base import (
    MAX_CONNECTIONS,
    Interval,
    McFigures,
    McInterval,
    McRampInterval,
    McTest,
    ProbeError,
    ProbeKind,
    RunStatus,
    RunSummary,
)
from inspector.probes.latency import LatencyRecorder, LatencySummary
from inspector.probes.memcached import probe as engine
from inspector.probes.memcached.ramp import MemcachedRamp, RampConfig, RampSummary, ramp_steps
from inspector.probes.memcached.target import DEFAULT_PORT, format_target
from inspector.probes.memcached.workload import SizeRange

DEADLINE_SLACK_S = 30.0     # a timed load's hard bound: its duration plus connect and preload
DEADLINE_S = 600.0          # the hard bound of a load bounded by a request count, or a ramp
RAMP_KEY_COUNT = 10000


@dataclass
class McRunConfig:
    kind: ClassVar[ProbeKind] = ProbeKind.MEMCACHED
    host: str = "127.0.0.1"             # a name is resolved once, up front
    port: int = DEFAULT_PORT
    concurrency: int = 32               # connections, one request in flight each
    execute_number: int | None = None   # requests per connection (memslap -e); default 10000
    duration: float | None = None       # or run for this long
    test: McTest = McTest.SET
    read_only: bool = False             # get test without the preload: nothing is stored
    set_ratio: float = 0.1              # mix: fraction of sets
    key_count: int | None = None
    key_size: SizeRange = SizeRange(20, 60)
    value_size: SizeRange = SizeRange(50, 5000)
    flush: bool = False
    rate: float | None = None           # requests/s per connection (None: closed loop)
    workers: int = 1                    # load processes
    connect_timeout: float = 3.0
    timeout: float = 2.0                # per request
    deadline: float | None = None       # hard bound; default: duration + 30 s, else 600 s
    ramp: bool = False
    start_connections: int = 32
    max_connections: int = 4096
    step_seconds: float = 2.0
    sample_interval: float = field(default=engine.SAMPLE_INTERVAL_S, compare=False)

    @property
    def target(self) -> str:
        return format_target(self.host, self.port)

    @property
    def effective_deadline(self) -> float:
        if self.deadline is not None:
            return self.deadline
        if self.duration is not None and not self.ramp:
            return self.duration + DEADLINE_SLACK_S
        return DEADLINE_S

    def load(self) -> engine.MemcachedLoad:
        return engine.MemcachedLoad(
            host=self.host, port=self.port, concurrency=self.concurrency,
            execute_number=self.execute_number, duration_s=self.duration, test=self.test,
            set_ratio=self.set_ratio, key_count=self.key_count, key_size=self.key_size,
            value_size=self.value_size, flush=self.flush, rate_per_conn=self.rate,
            connect_timeout_s=self.connect_timeout, request_timeout_s=self.timeout,
            deadline_s=self.effective_deadline, sample_interval_s=self.sample_interval,
            workers=self.workers, preload=not self.read_only)

    def ramp_config(self) -> RampConfig:
        return RampConfig(
            host=self.host, port=self.port, start=self.start_connections,
            max_connections=self.max_connections, step_s=self.step_seconds, test=self.test,
            set_ratio=self.set_ratio, key_count=self.key_count or RAMP_KEY_COUNT,
            key_size=self.key_size, value_size=self.value_size, flush=self.flush,
            rate_per_conn=self.rate, connect_timeout_s=self.connect_timeout,
            request_timeout_s=self.timeout, deadline_s=self.effective_deadline)

    @property
    def connections(self) -> int:
        """The most connections the run opens at once."""
        return self.max_connections if self.ramp else self.concurrency

    def validate(self) -> None:
        if not 1 <= self.connections <= MAX_CONNECTIONS:
            raise ProbeError(f"connections must be within 1..{MAX_CONNECTIONS} "
                             f"(got {self.connections})")
        if self.read_only and self.test != McTest.GET:
            raise ProbeError("read-only applies to the get test (a set test stores keys)")
        if not self.ramp:
            self.load().validate()
            return
        if self.read_only:
            raise ProbeError("a ramp preloads its keys: read-only applies to a load")
        if self.key_count is not None and self.key_count > engine.MAX_KEY_COUNT:
            raise ProbeError(f"key count must be within 1..{engine.MAX_KEY_COUNT} (every key is "
                             "held in memory)")
        if self.step_seconds <= 0:
            raise ProbeError("a ramp step needs a positive time")
        ramp_steps(self.start_connections, self.max_connections)


@dataclass
class McRunResult:
    detail: engine.ProbeSummary | RampSummary
    totals: dict[str, LatencyRecorder]
    interval_p99_ns: list[float]
    interval_avg_ns: list[float]

    def summary(self) -> RunSummary:
        s = self.detail
        status = RunStatus(s.status)
        if isinstance(s, RampSummary):
            ops = sum(st.ops for st in s.steps)
            seconds = sum(st.run_s for st in s.steps)
            errors = sum(st.error_total for st in s.steps)
            return RunSummary(
                ProbeKind.MEMCACHED, s.target, status, LatencySummary(0, None, None, None, None),
                reason=s.reason, error=_error(status, s.reason, bool(errors)), requests=ops,
                errors=errors,
                seconds=seconds, ops_per_s=ops / seconds if seconds else 0.0,
                note=s.knee_reason or s.reason,
                memcached=McFigures("ramp", max((st.opened for st in s.steps), default=0),
                                    s.address))
        total = LatencyRecorder()
        for rec in self.totals.values():
            total.merge(rec)
        return RunSummary(
            ProbeKind.MEMCACHED, s.target, status, total.summary(), reason=s.reason,
            error=_error(status, s.reason, bool(s.errors)), requests=s.ops_total,
            errors=sum(s.errors.values()),
            seconds=s.load_s, ops_per_s=s.ops_per_s, histogram=total.buckets(),
            interval_p99_ns=self.interval_p99_ns, interval_avg_ns=self.interval_avg_ns,
            note=f"{s.status}: {s.reason}",
            memcached=McFigures(s.test, s.connections_opened, s.address, dict(s.errors),
                                s.get_hits, s.get_misses,
                                s.server.error if s.server else None))


def _error(status: RunStatus, reason: str, errors: bool) -> str | None:
    return None if status == RunStatus.COMPLETED and not errors else f"{status}: {reason}"


class McRun:
    """The memcached probe as a Probe (probes.base)."""
    kind = ProbeKind.MEMCACHED
    uvloop = True               # the load needs uvloop's lower per-request cost (memcslap-class)
    deadline: float | None = None   # the engine keeps its own hard bound (effective_deadline)

    def __init__(self, config: McRunConfig):
        config.validate()
        self.config = config
        self._engine: engine.MemcachedProbe | MemcachedRamp | None = None
        self._p99: list[float] = []
        self._avg: list[float] = []
        self._stopped = False

    def prepare(self) -> None:
        if self._engine is not None:
            return
        engine.ensure_nofile(self.config.connections)     # ProbeError naming the limit
        self._engine = (MemcachedRamp(self.config.ramp_config()) if self.config.ramp
                        else engine.MemcachedProbe(self.config.load()))

    async def intervals(self) -> AsyncIterator[Interval]:
        self.prepare()
        assert self._engine is not None
        if self._stopped:
            self._engine.stop()
        ops = errors = 0
        if isinstance(self._engine, MemcachedRamp):
            async for step in self._engine:
                ops += step.ops
                errors += step.error_total
                yield Interval(
                    t=step.run_s, seconds=step.run_s, ops=step.ops, ops_total=ops,
                    ops_per_s=step.ops_per_s, p50_ns=step.p50_ns, p99_ns=step.p99_ns,
                    max_ns=step.max_ns, errors=step.error_total, errors_total=errors,
                    memcached_ramp=McRampInterval(step.connections, step.opened, step.open_s,
                                                  dict(step.errors), step.server_rejected))
            return
        async for s in self._engine:
            for lat in s.latency_ns.values():      # the spread diff judges, per operation
                if "p99" in lat:
                    self._p99.append(lat["p99"])
                if "avg" in lat:
                    self._avg.append(lat["avg"])
            n, failed = sum(s.ops.values()), sum(s.errors.values())
            ops += n
            errors += failed
            op = max(s.latency_ns, key=lambda k: s.ops.get(k, 0), default=None)
            lat = s.latency_ns.get(op, {}) if op else {}
            yield Interval(
                t=s.t_s, seconds=s.interval_s, ops=n, ops_total=ops, ops_per_s=s.ops_per_s,
                p50_ns=lat.get("p50"), p99_ns=lat.get("p99"), max_ns=lat.get("max"),
                avg_ns=lat.get("avg"), errors=failed, errors_total=errors,
                memcached=McInterval(s.t_s, s.interval_s, dict(s.ops), s.ops_per_s,
                                     {k: dict(v) for k, v in s.latency_ns.items()},
                                     dict(s.errors), s.connections, s.in_flight))

    def stop(self) -> None:
        self._stopped = True
        if self._engine is not None:
            self._engine.stop()

    def close(self) -> None:
        pass

    @property
    def result(self) -> McRunResult | None:
        if self._engine is None or self._engine.summary is None:
            return None
        totals = getattr(self._engine, "total", {})
        return McRunResult(self._engine.summary, totals, self._p99, self._avg)
