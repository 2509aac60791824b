"""The IO latency probe behind the probe interface (probes.base): config, run, summary.

IoRunConfig is what `probe io` fills from its options and what a request (`--probe io:PATH`,
the TUI's form) becomes; IoRun opens the target (io_target: the safety rules) and drives the
engine (io_latency: IoLatencyProbe, or IoRamp with `ramp`).

Both are bounded for a filesystem that stops answering: the set-up (stat, open, the test
file) waits at most `setup_timeout` (the run's time bound, 2 to 15 s), and the engine runs in
a child process (io_child) that ends a stuck run shortly after its time bound, so a worker
stuck in a read never keeps the caller from printing its figures and exiting."""
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from inspector.probes.base import (
    Interval,
    IoFigures,
    IoInterval,
    IoMode,
    ProbeError,
    ProbeKind,
    RunStatus,
    RunSummary,
    TimingLoop,
)
from inspector.probes.io.child import EngineProcess
from inspector.probes.io.latency import (
    PYTHON_LOOP_NOTE,
    RAW_LIMIT,
    IoConfig,
    IoLatencyProbe,
    IoRamp,
    IoResult,
    RampResult,
    ramp_jobs,
    uses_native_loop,
)
from inspector.probes.io.target import SETUP_TIMEOUT, TargetError, open_target

if TYPE_CHECKING:
    from inspector.probes.io.target import IoTarget

DEFAULT_DEADLINE = 3.0          # like `ioping -R` when neither a count nor a deadline is given
DEFAULT_STEP = 2.0              # seconds per ramp step
MIN_SETUP = 2.0                 # set-up bound of a short run (stat, open, 64 MiB test file)


@dataclass
class IoRunConfig:
    kind: ClassVar[ProbeKind] = ProbeKind.IO
    target: str                         # directory, mountpoint, regular file or block device
    mode: IoMode = IoMode.READ
    request_size: int = 4096
    working_set: int | None = None      # default: 64 MiB in a directory, else the whole target
    direct: bool = True                 # O_DIRECT (False: buffered, the page cache left alone)
    count: int | None = None            # requests, warm-ups included (ioping -c)
    deadline: float | None = None       # seconds (ioping -w); with `ramp` per step
    interval: float = 0.0               # pause between a worker's requests (ioping -i)
    jobs: int = 1                       # workers; with `ramp` the most of them
    sequential: bool = False
    ramp: bool = False                  # 1, 2, 4 ... jobs workers, `deadline` each
    sample_period: float = 0.25
    # raw latencies held before they are folded into the histogram: a memory bound of the
    # process hosting the run, not a property of the measurement (io_latency.IoConfig)
    raw_limit: int = field(default=RAW_LIMIT, compare=False)

    @property
    def effective_deadline(self) -> float | None:
        if self.ramp:
            return self.deadline or DEFAULT_STEP
        if self.count is None and self.deadline is None:
            return DEFAULT_DEADLINE
        return self.deadline

    @property
    def setup_timeout(self) -> float:
        """How long the set-up may take: a run bounded to 3 s does not wait 15 s for a mount
        that never answers its stat (a run bounded by a count only: the whole 15 s)."""
        bound = self.effective_deadline
        return SETUP_TIMEOUT if bound is None else min(SETUP_TIMEOUT, max(MIN_SETUP, bound))

    @property
    def run_bound(self) -> float | None:
        """The whole run's time bound (every step of a ramp); None for a count only."""
        step = self.effective_deadline
        if step is None or not self.ramp:
            return step
        return step * len(ramp_jobs(self.jobs))

    def engine_config(self) -> IoConfig:
        return IoConfig(mode=self.mode, request_size=self.request_size,
                        count=None if self.ramp else self.count,
                        deadline=self.effective_deadline, interval=self.interval, jobs=self.jobs,
                        sequential=self.sequential, sample_period=self.sample_period,
                        raw_limit=self.raw_limit)

    def validate(self) -> None:
        if not self.target:
            raise ProbeError("the IO probe needs a target: a directory, file or block device")
        if self.request_size <= 0:
            raise ProbeError(f"request size {self.request_size} bytes must be positive",
                             target=True)
        if self.working_set is not None and self.working_set <= 0:
            raise ProbeError(f"working set {self.working_set} bytes must be positive",
                             target=True)
        if self.ramp and self.count is not None:
            raise ProbeError("a ramp runs every step for its time bound: a count does not apply")
        try:
            self.engine_config().validate()
        except ValueError as exc:
            raise ProbeError(str(exc)) from None


@dataclass
class IoRunResult:
    detail: IoResult | RampResult
    stopped: bool

    def summary(self) -> RunSummary:
        detail = self.detail
        if isinstance(detail, RampResult):      # the last step stands for the ramp
            last = detail.steps[-1].result if detail.steps else None
            return _summary(last, detail.error, self.stopped or detail.interrupted)
        return _summary(detail, detail.error, self.stopped or detail.interrupted)


def _summary(r: IoResult | None, error: str | None, stopped: bool) -> RunSummary:
    from inspector.probes.latency import LatencySummary
    if r is not None and not r.requests and not error and not stopped:
        # a run that timed nothing must not read as a healthy one (no figures, no error):
        # its time went to the warm-up (a loaded host, a slow disk) or the set-up
        error = (f"no request timed in {r.wall_ns / 1e9:.2g} s "
                 f"({'only the warm-up request completed' if r.warmups else 'none completed'})")
    status = (RunStatus.FAILED if error else RunStatus.STOPPED if stopped
              else RunStatus.COMPLETED)
    if r is None:
        return RunSummary(ProbeKind.IO, "", status, LatencySummary(0, None, None, None, None),
                          reason=error or "", error=error, errors=int(bool(error)))
    return RunSummary(
        ProbeKind.IO, r.path, status, r.latency, reason=error or "", error=error,
        requests=r.requests, errors=sum(1 for s in r.samples if s.error) or int(bool(error)),
        seconds=r.wall_ns / 1e9, ops_per_s=r.iops_mean,
        histogram=r.histogram(),
        interval_p99_ns=[s.stats.p99_ns for s in r.samples if s.stats.p99_ns is not None],
        interval_avg_ns=[s.stats.avg_ns for s in r.samples if s.stats.avg_ns is not None],
        note=r.description,
        io=IoFigures(r.path, r.description, r.mode, r.request_size, r.jobs, r.direct,
                     r.iops_wall, r.bytes_per_s, r.loop))


class IoRun:
    """The IO probe as a Probe (probes.base)."""
    kind = ProbeKind.IO
    uvloop = False
    deadline: float | None = None   # the engine keeps its own (ioping -w; workers stop on time)

    def __init__(self, config: IoRunConfig):
        config.validate()
        self.config = config
        self.target: IoTarget | None = None
        self._engine: IoLatencyProbe | IoRamp | None = None
        self._process: EngineProcess | None = None
        self._stopped = False

    @property
    def notes(self) -> list[str]:
        """For the operator, before the run: the O_DIRECT fallback, the Python loop."""
        notes = list(self.target.notes) if self.target else []
        if not uses_native_loop(self.config.engine_config()):
            notes.append(PYTHON_LOOP_NOTE)
        return notes

    def prepare(self) -> None:
        if self.target is not None:
            return
        cfg = self.config
        try:
            self.target = open_target(cfg.target, write=cfg.mode != IoMode.READ,
                                      request_size=cfg.request_size,
                                      working_set=cfg.working_set, direct=cfg.direct,
                                      setup_timeout=cfg.setup_timeout)
        except TargetError as exc:
            raise ProbeError(str(exc), target=True) from None
        try:
            if cfg.ramp:
                self._engine = IoRamp(self.target, cfg.engine_config(), cfg.jobs,
                                      cfg.effective_deadline or DEFAULT_STEP)
            else:
                self._engine = IoLatencyProbe(self.target, cfg.engine_config())
        except ValueError as exc:       # refused write, a working set under one request
            self.close()
            raise ProbeError(str(exc), target=True) from None
        if self._stopped:
            self._engine.stop()

    async def intervals(self) -> AsyncIterator[Interval]:
        self.prepare()
        assert self._engine is not None and self.target is not None
        loop: TimingLoop = "c" if uses_native_loop(self.config.engine_config()) else "python"
        ops = errors = 0
        self._process = EngineProcess(self._engine, self.target.fd, self.config.run_bound)
        if self._stopped:
            self._process.stop()
        try:
            async for s in self._process.samples():
                st = s.stats
                ops += s.requests
                errors += 1 if s.error else 0
                yield Interval(
                    t=s.t, seconds=s.duration, ops=s.requests, ops_total=ops, ops_per_s=s.iops,
                    p50_ns=st.p50_ns if st.p50_ns is not None else st.avg_ns, p99_ns=st.p99_ns,
                    max_ns=st.max_ns, avg_ns=st.avg_ns, errors=1 if s.error else 0,
                    errors_total=errors, center="p50" if st.p50_ns is not None else "avg",
                    io=IoInterval(jobs=s.jobs, bytes_per_s=s.bytes_per_s, min_ns=st.min_ns,
                                  avg_ns=st.avg_ns, loop=loop, latencies_ns=s.latencies_ns,
                                  warmups_ns=s.warmups_ns, error=s.error))
        finally:
            self.close()

    def stop(self) -> None:
        self._stopped = True
        if self._process is not None:
            self._process.stop()
        elif self._engine is not None:
            self._engine.stop()

    def close(self) -> None:
        if self.target is not None:
            self.target.close()

    @property
    def result(self) -> IoRunResult | None:
        detail = self._process.result if self._process is not None else None
        return None if detail is None else IoRunResult(detail, self._stopped)
