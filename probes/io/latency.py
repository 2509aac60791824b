"""IO latency probe, ioping-class: one request at a time per worker, random aligned offsets.

    target = open_target("/var/lib", request_size=4096)          # io_target: safety rules
    probe = IoLatencyProbe(target, IoConfig(deadline=3.0))
    async for sample in probe:          # IoSample, 4 per second by default
        ...
    probe.result                        # IoResult: ioping's statistics plus percentiles

Workers are threads; they wait for one start signal once all exist, so all run for the
whole run. Each runs its requests in bursts timed by the C loop of probes/io/_ioloop.c with the
GIL released for the whole burst: the clock reads sit tight around the syscall as in ioping,
no other thread of the process (the TUI's) can add a GIL wait to a latency, and since the C
loop reads the stop byte before each request a burst lasts until the next tick, so a worker
needs the GIL only a few times a second. Where the extension is not built, a Python loop with
the same interface does the same work in bursts of ~5 ms (more time per request, which
tests/bench/bench_io_latency.py prints, and exposed to GIL waits; IoResult.loop says which ran).
Offsets are drawn in chunks outside the timed window, the buffer is a page-aligned mmap and
latencies go into preallocated slots. Statistics are folded in at flush time, 4 times a
second, by the worker itself outside the timed window, so the async side only drains small
hand-offs and never holds the GIL for long.

Intervals: a sample covers (end of the previous sample, its own end]: its tick, once every
worker has handed over its share of that tick, or the run's real end for the last, partial
interval, so rates are requests over real elapsed time. Ping pauses (-i) end at the deadline.
Each worker keeps its own figures (IoResult.workers); the summary is their merge: histograms
added, requests and busy time summed, IOPS summed.

Cancellation (task cancel, Ctrl-C) sets the stop signal; workers stop after the request in flight
and the partial results stay in `probe.result`. A failing request (EIO, short read because the
target shrank) stops the run with `result.error` set, keeping everything measured before it.
"""
from __future__ import annotations

import asyncio
import collections
import errno
import mmap
import os
import random
import threading
import time
from array import array
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from inspector.probes.base import MAX_IO_JOBS, IoMode, TimingLoop
from inspector.probes.io.stats import BatchStats, IntervalPart, record_batch
from inspector.probes.io.target import IoTarget
from inspector.probes.latency import LatencyRecorder, LatencySummary

try:                                   # the timed request loop in C (probes/io/_ioloop.c)
    from inspector.probes.io import _ioloop
except ImportError:                    # installed without a compiler: the Python loop
    _ioloop = None  # type: ignore[assignment]  # (uses check self.native first)

READ, WRITE, MIXED = IoMode.READ, IoMode.WRITE, IoMode.MIXED
OFFSET_CHUNK = 4096            # offsets drawn per refill, outside the timed loop
LATENCY_SLOTS = 1 << 13        # latencies per hand-off at most (besides the 4 Hz ticks):
                               # preallocated for the C loop, 64 KB per worker (up to 8)
BURST_NS = 5_000_000           # requests run in bursts of ~5 ms between tick/deadline checks
MAX_BURST = OFFSET_CHUNK
RAW_LIMIT = 1 << 22            # raw latencies kept (all workers) before folding into the
                               # histogram mid-run; below it, folding waits for the end
JOIN_TIMEOUT = 2.0
TICK_GRACE_NS = 10_000_000     # drain just after the workers' flush so samples are not merged
STRAGGLER_POLL_NS = 2_000_000  # while a worker has not handed its share of a tick over yet
DONE_NS = 1 << 62              # a finished worker covers all time
MAX_JOBS = MAX_IO_JOBS         # workers are threads of this process, each needing the GIL to
                               # start and a few times a second after: the more of them, the
                               # more of a short run's workers never run a request
                               # (bench_io_latency.py prints 256 and 512 in a 1 s run)


@dataclass
class IoConfig:
    mode: IoMode = READ                # writes: directory targets only
    request_size: int = 4096
    count: int | None = None           # total requests, warm-ups included (like ioping -c)
    deadline: float | None = None      # seconds (like ioping -w)
    interval: float = 0.0              # seconds between a worker's requests (ioping -i)
    jobs: int = 1
    sequential: bool = False
    sample_period: float = 0.25        # interval samples for live charts: 4 per second
    write_ratio: float = 0.5           # share of writes in mixed mode
    seed: int | None = None
    # raw latencies kept (all workers) before they are folded into the histogram mid-run: the
    # default defers folding (no pause in the timed loop for runs under ~4 min at 15k req/s,
    # 32 MB); a host that must keep its RSS low passes a small limit and pays a fold, in the
    # worker's time, every `raw_limit` requests (bench_costs.py prints a 2^18 fold's cost)
    raw_limit: int = RAW_LIMIT
    # time.monotonic_ns: the same CLOCK_MONOTONIC as perf_counter_ns on Linux, and no dearer
    # per call (two calls per request, one inside the timed window; bench_costs.py prints both)
    clock: Callable[[], int] = field(default=time.monotonic_ns, repr=False)
    # time requests in the C loop (GIL released for a whole burst, clock reads tight around
    # the syscall) when it is built; False forces the Python loop, the only one that can use
    # an injected clock
    native: bool = True

    def validate(self) -> None:
        if self.mode not in (READ, WRITE, MIXED):
            raise ValueError(f"mode must be read, write or mixed, not {self.mode!r}")
        if self.count is None and self.deadline is None:
            raise ValueError("a probe needs a bound: a request count or a deadline")
        if self.count is not None and self.count < self.jobs:
            raise ValueError(f"count {self.count} is less than one request per worker "
                             f"({self.jobs} workers)")
        if self.deadline is not None and self.deadline <= 0:
            raise ValueError("deadline must be positive")
        if not 1 <= self.jobs <= MAX_JOBS:
            raise ValueError(f"jobs must be within 1..{MAX_JOBS} (each worker is a thread of "
                             "this process; more of them cannot all run at once)")
        if self.interval < 0 or self.sample_period <= 0:
            raise ValueError("interval must be >= 0 and sample period > 0")


def uses_native_loop(cfg: IoConfig) -> bool:
    """Whether the C loop times this configuration's requests (else the Python loop)."""
    return cfg.native and _ioloop is not None and cfg.clock is time.monotonic_ns


PYTHON_LOOP_NOTE = ("requests timed by the Python loop (the C loop of inspector.probes.io._ioloop "
                    "is not built: reinstall with a C compiler): about 1 us more per request, "
                    "and another busy thread of this process shows as latency")


@dataclass
class IoSample:
    """One interval of the run (every sample_period seconds), for live charts."""
    t: float                    # seconds since the start, at the end of this interval
    duration: float
    jobs: int
    requests: int
    iops: float
    bytes_per_s: float
    stats: BatchStats
    latencies_ns: list[int] = field(default_factory=list)   # in order; ping mode (interval>0)
    warmups_ns: list[int] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict:
        out = asdict(self)
        out.update(out.pop("stats"))
        return out


class Recorded:
    """What is read of a LatencyRecorder once a run is over (its busy time and histogram),
    as a run in a child process (probes.io.child) sends it back: a LatencyRecorder does not
    pickle (hdrh's ctypes arrays)."""

    def __init__(self, total: int, count: int, buckets: list[tuple[int, int]]):
        self.total, self.count, self._buckets = total, count, buckets

    def buckets(self) -> list[tuple[int, int]]:
        return self._buckets


@dataclass
class IoResult:
    path: str
    description: str
    mode: IoMode
    request_size: int
    jobs: int
    direct: bool
    requests: int                # valid (timed) requests
    warmups: int
    wall_ns: int
    reads: int
    writes: int
    latency: LatencySummary
    error: str | None = None
    interrupted: bool = False
    stuck_workers: int = 0
    loop: TimingLoop = "c"       # what timed the requests: "c" or "python"
    # a child's run arrives with its recorder reduced to what is read of it (io_child.Recorded)
    recorder: LatencyRecorder | Recorded | None = field(default=None, repr=False)
    samples: list[IoSample] = field(default_factory=list, repr=False)
    workers: list[IoWorkerResult] = field(default_factory=list, repr=False)

    @property
    def total_requests(self) -> int:
        return self.requests + self.warmups

    @property
    def busy_ns(self) -> int:
        """Sum of the timed latencies, every worker's (ioping's "completed in" for one)."""
        if self.recorder is not None:
            return self.recorder.total
        avg = self.latency.avg_ns
        return round(avg * self.requests) if self.requests and avg is not None else 0

    @property
    def busy_per_worker_ns(self) -> float:
        """The time each worker spent in requests, on average: `busy_ns / jobs`."""
        return self.busy_ns / self.jobs

    @property
    def iops_mean(self) -> float:
        """ioping's "requests completed" iops (1/mean latency), summed over the workers:
        concurrent workers' rates add up, so this is the sum of the per-worker figures."""
        counted = [w for w in self.workers if not w.stuck]
        if counted:
            return sum(w.iops_mean for w in counted)
        return self.jobs * 1e9 * self.requests / self.busy_ns if self.busy_ns else 0.0

    @property
    def iops_wall(self) -> float:
        """Requests actually achieved per wall second (ioping's "generated" line)."""
        return 1e9 * self.total_requests / self.wall_ns if self.wall_ns else 0.0

    @property
    def bytes_per_s(self) -> float:
        return self.iops_mean * self.request_size

    @property
    def wall_bytes_per_s(self) -> float:
        return self.iops_wall * self.request_size

    def summary_json(self) -> dict:
        lat = self.latency
        return {
            "path": self.path, "description": self.description, "mode": self.mode,
            "request_size": self.request_size, "jobs": self.jobs, "direct": self.direct,
            "requests": self.requests, "warmups": self.warmups,
            "total_requests": self.total_requests, "reads": self.reads, "writes": self.writes,
            "busy_ns": self.busy_ns, "wall_ns": self.wall_ns,
            "iops": self.iops_mean, "iops_wall": self.iops_wall,
            "bytes_per_s": self.bytes_per_s, "wall_bytes_per_s": self.wall_bytes_per_s,
            "min_ns": lat.min_ns, "avg_ns": lat.avg_ns, "max_ns": lat.max_ns,
            "mdev_ns": lat.mdev_ns, "percentiles_ns": dict(lat.percentiles_ns),
            "error": self.error, "interrupted": self.interrupted, "loop": self.loop,
            "workers": [w.to_json() for w in self.workers],
        }

    def histogram(self) -> list[tuple[int, int]]:
        return self.recorder.buckets() if self.recorder else []


@dataclass
class IoWorkerResult:
    """One worker's figures; the run's summary is their merge (histograms added, counts and
    busy time summed, IOPS summed)."""
    index: int
    requests: int                # valid (timed) requests
    warmups: int
    busy_ns: int
    latency: LatencySummary
    stuck: bool = False          # still blocked in a request: not merged into the summary
    recorder: LatencyRecorder | None = field(default=None, repr=False)

    @property
    def iops_mean(self) -> float:
        return 1e9 * self.requests / self.busy_ns if self.busy_ns else 0.0

    def to_json(self) -> dict:
        lat = self.latency
        return {"worker": self.index, "requests": self.requests, "warmups": self.warmups,
                "busy_ns": self.busy_ns, "iops": self.iops_mean, "min_ns": lat.min_ns,
                "avg_ns": lat.avg_ns, "max_ns": lat.max_ns, "mdev_ns": lat.mdev_ns,
                "percentiles_ns": dict(lat.percentiles_ns), "stuck": self.stuck}


class IoError(Exception):
    """A request failed mid-run: the message names the request, offset and cause."""


@dataclass
class _Batch:
    """What a worker hands to the async side at a flush: aggregates of the interval."""
    part: IntervalPart
    in_order: list[int]            # ping mode only
    warmups: list[int]
    writes: int
    error: str | None = None


class _Stop:
    """A probe's stop signal: an Event for the Python side, and a byte the C loop reads before
    each request with the GIL released (so a burst can last until the next tick)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.flag = bytearray(1)

    def set(self) -> None:
        self.flag[0] = 1
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()

    def wait(self, timeout: float) -> bool:
        return self.event.wait(timeout)


class _Worker(threading.Thread):
    def __init__(self, index: int, target: IoTarget, cfg: IoConfig, quota: int | None,
                 deadline_ns: int | None, stop: _Stop, go: threading.Event,
                 on_done: Callable[[], None]):
        super().__init__(name=f"io-probe-{index}", daemon=True)
        self.target, self.cfg, self.quota = target, cfg, quota
        self.deadline_ns, self.stop, self.go, self.on_done = deadline_ns, stop, go, on_done
        self.out: collections.deque[_Batch] = collections.deque()
        self.recorder = LatencyRecorder()
        self.raw = array("q")
        self.raw_limit = max(LATENCY_SLOTS, cfg.raw_limit // cfg.jobs)
        self.end_ns = 0
        self.start_ns = 0              # set by the probe just before start()
        self.warmups = 0               # warm-up requests completed (0 or 1)
        # time up to which this worker has handed everything over (its clock): the async
        # side waits for every worker to cover a tick before it closes that interval
        self.covered_ns = 0
        self.last_ns = 0               # end of its last request or pause (its clock)
        self.rng = random.Random(None if cfg.seed is None else cfg.seed * 1009 + index)
        blocks = target.working_set // cfg.request_size
        self.population = range(0, blocks * cfg.request_size, cfg.request_size)
        self.next_seq = self.rng.randrange(blocks) if cfg.sequential else 0
        span = blocks * cfg.request_size
        pow2 = span & (span - 1) == 0 and cfg.request_size & (cfg.request_size - 1) == 0
        self.lane_mask = (span - 1) & ~(cfg.request_size - 1) if pow2 and span < 1 << 63 else 0
        self.masks: dict[int, int] = {}
        self.buf = mmap.mmap(-1, max(cfg.request_size, mmap.PAGESIZE))   # page aligned
        if cfg.mode != READ:
            self.buf.write(os.urandom(len(self.buf)))   # not zeros: no shortcut for the device
        self.bufs: list[memoryview] = [memoryview(self.buf)[:cfg.request_size]]  # Python loop
        # the C loop times the requests unless it is not built or the clock is injected (it
        # reads CLOCK_MONOTONIC itself)
        self.native = uses_native_loop(cfg)
        # latencies since the last hand-off: preallocated slots for the C loop, appended to
        # by the Python loop
        # (fewer per worker when there are many: each one's share of the device is smaller)
        self.slots = min(LATENCY_SLOTS, max(1024, (LATENCY_SLOTS * 8) // cfg.jobs))
        self.lat = array("q", bytes(8 * self.slots) if self.native else b"")
        self.filled = 0
        self.native_flags = 0
        self.native_part = _ioloop.part if self.native else None
        if self.native:
            self.native_flags = ((_ioloop.WRITE if cfg.mode == WRITE else 0)
                                 | (_ioloop.FADVISE if target.fadvise else 0))

    # -- offsets -------------------------------------------------------------------------------
    def _offsets(self, n: int) -> array:
        """n request offsets, as an array of uint64 (what the C loop reads)."""
        blocks = len(self.population)
        size = self.cfg.request_size
        if self.cfg.sequential:
            start = self.next_seq
            self.next_seq = (start + n) % blocks
            return array("Q", [self.population[(start + i) % blocks] for i in range(n)])
        if self.lane_mask:
            # power-of-two working set and request size: one big-int AND masks every 64-bit
            # lane of random bytes down to an aligned offset (no bias; bench_costs.py prints
            # the cost per offset of both draws and of rng.choices)
            raw = int.from_bytes(self.rng.randbytes(8 * n), "little") & self._mask_for(n)
            return array("Q", raw.to_bytes(8 * n, "little"))
        # general sizes: cheaper than rng.choices; modulo bias <= blocks / 2**32 (2**64)
        if blocks <= 1 << 24:
            draws = array("I", self.rng.randbytes(4 * n))
        else:
            draws = array("Q", self.rng.randbytes(8 * n))
        return array("Q", [x % blocks * size for x in draws])

    def _mask_for(self, n: int) -> int:
        mask = self.masks.get(n)
        if mask is None:
            mask = self.masks[n] = int.from_bytes(
                self.lane_mask.to_bytes(8, "little") * n, "little")
        return mask

    def _ops(self, n: int) -> bytes | None:
        """Mixed mode: one byte per request, 1 for a write."""
        if self.cfg.mode == MIXED:
            rnd = self.rng.random
            ratio = self.cfg.write_ratio
            return bytes(rnd() < ratio for _ in range(n))
        return None

    # -- bursts: timed requests, in C when built, else in Python ------------------------------
    # burst(offsets, ops, pos, n, stop_at) runs up to n requests at offsets[pos:], one at a
    # time, storing latencies from self.lat[self.filled] on; it returns after the first request
    # that ends at or after stop_at, or at the first failure. ops (mixed mode) flags the
    # writes; None means every request is the mode's own (mixed mode's warm-up: a read).
    # Returns (ran, t1, writes, failure): failure is None or (errno, bytes transferred) of
    # request number `ran` (errno 0: a short transfer; -1 bytes: the call failed).

    def _native_burst(self, offsets: array, ops: bytes | None, pos: int, n: int,
                      stop_at: int) -> tuple[int, int, int, tuple[int, int] | None]:
        flags = self.native_flags | (_ioloop.MIXED if ops is not None else 0)
        ran, t1, writes, err, nbytes = _ioloop.burst(
            self.target.fd, self.buf, self.cfg.request_size, offsets, ops, pos, n, self.lat,
            self.filled, stop_at, flags, self.stop.flag)
        self.filled += ran
        return ran, t1, writes, None if nbytes == self.cfg.request_size else (err, nbytes)

    def _python_burst(self, offsets: array, ops: bytes | None, pos: int, n: int,
                      stop_at: int) -> tuple[int, int, int, tuple[int, int] | None]:
        # Only the request, its two clock reads, the short-IO check, the append and one
        # comparison with stop_at per request; fadvise sits outside the timed window. Here
        # self.lat grows by append (cheaper in Python than a store at an index).
        fd, size, lat, clock = self.target.fd, self.cfg.request_size, self.lat, self.cfg.clock
        bufs, append = self.bufs, self.lat.append
        fadvise = os.posix_fadvise if self.target.fadvise else None
        dontneed = os.POSIX_FADV_DONTNEED
        read_op, write_op = os.preadv, os.pwritev
        first = len(lat)
        t1 = writes = 0
        failure = None
        todo = offsets[pos:pos + n]
        try:
            if ops is not None:
                for off, is_write in zip(todo, ops[pos:pos + n]):
                    if fadvise:
                        fadvise(fd, off, size, dontneed)
                    t0 = clock()
                    got = (write_op if is_write else read_op)(fd, bufs, off)
                    t1 = clock()
                    if got != size:
                        failure = (0, got)
                        break
                    append(t1 - t0)
                    writes += is_write
                    if t1 >= stop_at:
                        break
            else:
                op = write_op if self.cfg.mode == WRITE else read_op
                for off in todo:
                    if fadvise:
                        fadvise(fd, off, size, dontneed)
                    t0 = clock()
                    got = op(fd, bufs, off)
                    t1 = clock()
                    if got != size:
                        failure = (0, got)
                        break
                    append(t1 - t0)
                    if t1 >= stop_at:
                        break
        except OSError as exc:
            t1 = clock()
            failure = (exc.errno or errno.EIO, -1)
        self.filled = len(lat)
        return self.filled - first, t1, writes, failure

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._run()
        except IoError as exc:           # the warm-up request failed
            self.out.append(_Batch(IntervalPart(), [], [], 0, str(exc)))
        except OSError as exc:
            error = _os_error(self.cfg.mode, exc.errno or errno.EIO, 0, 1, self.cfg.mode == WRITE)
            self.out.append(_Batch(IntervalPart(), [], [], 0, error))
        except BaseException as exc:     # never die silently: the async side reports it
            self.out.append(_Batch(IntervalPart(), [], [], 0, f"worker failed: {exc!r}"))
        finally:
            self.end_ns = time.monotonic_ns()
            self.covered_ns = DONE_NS
            self._fold()
            self.bufs[0].release()
            try:
                self.buf.close()
            except BufferError:          # a traceback still holds a view of it
                pass
            self.on_done()

    def _fold(self) -> None:
        record_batch(self.recorder, self.raw)
        self.raw = array("q")

    def _publish(self, chunk: array, in_order: bool, warmups: list[int],
                 writes: int, error: str | None = None, covered: int | None = None) -> None:
        self.raw.extend(chunk)
        self.out.append(_Batch(IntervalPart.of(chunk, self.native_part),
                               chunk.tolist() if in_order else [],
                               warmups, writes, error))
        if covered is not None:        # after the append: covered means "already in out"
            self.covered_ns = self.last_ns = covered
        if len(self.raw) >= self.raw_limit:
            self._fold()

    def _take(self) -> array:
        """The latencies stored since the last hand-off; the slots are free again."""
        if self.native:
            chunk = self.lat[:self.filled]
        else:
            chunk, self.lat = self.lat, array("q")
        self.filled = 0
        return chunk

    def _failed(self, failure: tuple[int, int], off: int, is_write: bool, request: int) -> str:
        err, got = failure
        mode = (WRITE if is_write else READ) if self.cfg.mode == MIXED else self.cfg.mode
        if err:
            return _os_error(mode, err, off, request, is_write)
        return _short(mode, off, got, self.cfg.request_size, request)

    def _run(self) -> None:
        cfg, stop = self.cfg, self.stop
        self.go.wait()                   # every worker starts at once, once all exist
        if stop.is_set():
            return
        burst = self._native_burst if self.native else self._python_burst
        clock = cfg.clock
        period = int(cfg.sample_period * 1e9)
        ping = cfg.interval > 0          # flush after every request so each one is shown

        # warm-up: one request, timed and shown, excluded from the statistics (like ioping);
        # mixed mode warms up with a read
        offsets = self._offsets(1)
        ran, t1, _, failure = burst(offsets, None, 0, 1, 0)
        if failure:
            raise IoError(self._failed(failure, offsets[0], cfg.mode == WRITE, 1))
        if not ran:
            return                       # stopped before the warm-up (the C loop's stop byte)
        self.warmups = 1
        warmups = self._take().tolist()
        # ticks aligned with the async side's when both use CLOCK_MONOTONIC (the default);
        # with an injected clock, from the warm-up request's start
        base = self.start_ns if clock is time.monotonic_ns else t1 - warmups[0]
        deadline = base + self.deadline_ns if self.deadline_ns is not None else 1 << 62
        if ping:
            self._publish(array("q"), True, warmups, 0, covered=t1)
            warmups = []
            # no pause after a worker's last request: -c 5 -i 1 takes 4 s, like ioping
            if self.quota == 1 or not self._pause(cfg.interval, clock, deadline):
                return

        slots = self.slots
        injected = clock is not time.monotonic_ns
        done = 1             # requests handed over, warm-up included
        writes = 0
        next_flush = base + period
        next_event = 0 if ping else min(next_flush, deadline)
        offsets = array("Q")
        ops: bytes | None = None
        pos = 0              # next unused entry of `offsets`
        # Requests per burst. The C loop checks the stop byte before each request, so its
        # bursts run until the next tick (or a full chunk); the Python loop checks stop
        # between bursts, sized to last about BURST_NS. A burst ends within one request of
        # next_event (the next tick or the deadline), so a run ends within one request of its
        # deadline.
        size = MAX_BURST if self.native else 1
        while not stop.is_set() and t1 < deadline:
            if pos >= len(offsets):
                left = None if self.quota is None else self.quota - done - self.filled
                if left is not None and left <= 0:
                    break
                chunk = OFFSET_CHUNK if left is None else min(OFFSET_CHUNK, left)
                offsets, pos = self._offsets(chunk), 0
                ops = self._ops(chunk)
            # the burst's own time, not the wait for the GIL after the previous one (a busy
            # thread would shrink bursts to a request each, and each would wait for the GIL);
            # an injected clock is read only around requests
            start_t = t1 if injected or self.native else clock()
            ran, t_end, wrote, failure = burst(offsets, ops, pos,
                                               min(size, len(offsets) - pos,
                                                   slots - self.filled), next_event)
            if not ran and not failure:
                break                    # the C loop saw the stop byte before a request
            t1 = t_end
            pos += ran
            writes += wrote
            if failure:
                request = done + self.filled + 1
                is_write = bool(ops[pos]) if ops is not None else cfg.mode == WRITE
                self._publish(self._take(), ping, warmups, writes,
                              self._failed(failure, offsets[pos], is_write, request))
                return
            if not ping and ran and not self.native:
                per_request = (t1 - start_t) / ran if t1 > start_t else 1
                size = max(1, min(MAX_BURST, int(BURST_NS / per_request)))
            if t1 >= next_event or self.filled >= slots:
                # a tick, the deadline or full slots: hand the interval over
                done += self.filled
                self._publish(self._take(), ping, warmups, writes, covered=t1)
                warmups, writes = [], 0
                next_flush = t1 - (t1 - base) % period + period
                if ping and (done == self.quota
                             or not self._pause(cfg.interval, clock, deadline)):
                    return
                next_event = 0 if ping else min(next_flush, deadline)
        if self.filled or warmups:
            self._publish(self._take(), ping, warmups, writes, covered=t1)

    def _pause(self, seconds: float, clock: Callable[[], int], deadline: int) -> bool:
        """Wait between pings, never past the deadline; False when the run should end."""
        now = clock()
        wait_ns = min(int(seconds * 1e9), deadline - now)
        if wait_ns <= 0:
            return False
        self.covered_ns = now + wait_ns          # idle until then: nothing to hand over
        if self.stop.wait(wait_ns / 1e9):
            return False
        self.last_ns = now = clock()
        return now < deadline


def _short(mode: str, off: int, n: int, size: int, request: int) -> str:
    verb = "write" if mode == WRITE else "read"
    return (f"short {verb} at offset {off} (request {request}): {n} of {size} bytes; "
            "did the target shrink?")


def _os_error(mode: str, err: int, off: int, request: int, is_write: bool) -> str:
    verb = "write" if mode == WRITE or (mode == MIXED and is_write) else "read"
    name = errno.errorcode.get(err, "error")
    return f"{verb} failed at offset {off} (request {request}): {name} {os.strerror(err)}"


class IoLatencyProbe:
    """Async iterator of IoSample; `result` (IoResult) once the iteration has ended.

    The target stays open (and owned by the caller) so a ramp can reuse a prepared file."""

    def __init__(self, target: IoTarget, cfg: IoConfig):
        cfg.validate()
        if cfg.mode != READ and not target.writable:
            raise ValueError(f"refusing to write to {target.kind} {target.path}")
        if target.working_set < cfg.request_size:
            raise ValueError("working set smaller than one request")
        self.target, self.cfg = target, cfg
        self.result: IoResult | None = None
        self.samples: list[IoSample] = []
        self._stop = _Stop()
        self._workers: list[_Worker] = []
        self._error: str | None = None
        self._interrupted = False
        self._writes = 0
        self._reads = 0

    def stop(self) -> None:
        """Ask the workers to stop after their request in flight (thread-safe)."""
        self._stop.set()

    def __aiter__(self) -> AsyncIterator[IoSample]:
        return self._run()

    async def run_to_end(self) -> IoResult:
        async for _ in self:
            pass
        assert self.result is not None
        return self.result

    def _quotas(self) -> list[int | None]:
        jobs, count = self.cfg.jobs, self.cfg.count
        if count is None:
            return [None] * jobs
        return [count // jobs + (1 if i < count % jobs else 0) for i in range(jobs)]

    async def _run(self) -> AsyncIterator[IoSample]:
        loop = asyncio.get_running_loop()
        finished = asyncio.Event()
        remaining = [self.cfg.jobs]
        lock = threading.Lock()

        def worker_done() -> None:          # called in worker threads
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                try:
                    loop.call_soon_threadsafe(finished.set)
                except RuntimeError:        # the loop is gone: nobody is waiting any more
                    pass

        deadline_ns = None if self.cfg.deadline is None else int(self.cfg.deadline * 1e9)
        go = threading.Event()
        self._workers = [_Worker(i, self.target, self.cfg, quota, deadline_ns, self._stop, go,
                                 worker_done) for i, quota in enumerate(self._quotas())]
        started = 0
        try:
            for w in self._workers:
                w.start()
                started += 1
        except RuntimeError as exc:      # "can't start new thread": ulimit -u or -v
            self._error = f"could not start worker {started + 1} of {self.cfg.jobs}: {exc}"
            self._stop.set()             # the started ones end at once, without a request
            del self._workers[started:]
            with lock:
                remaining[0] -= self.cfg.jobs - started
                if remaining[0] == 0:
                    finished.set()
        # The workers wait for `go`: started one by one while the first ones already ran,
        # the last ones started late (each start waits for the GIL), and many of a short
        # run's workers never got past their warm-up.
        start = time.monotonic_ns()
        self._start = self._covered = start
        for w in self._workers:
            w.start_ns = start
        go.set()
        # Interval accounting: a sample covers [end of the previous sample, its own end].
        # With the default clock the workers' clock is this one, so a sample ends exactly
        # at its tick (or at the run's real end for the last, partial interval) and waits
        # for every worker's share of the tick; with an injected clock, at the drain time.
        aligned = self.cfg.clock is time.monotonic_ns
        period_ns = int(self.cfg.sample_period * 1e9)
        tick = 0
        try:
            while not finished.is_set():
                tick += 1
                await _wait(finished, start + tick * period_ns + TICK_GRACE_NS)
                # a late wake-up (slow consumer) closes the latest tick, not a stale one
                tick = max(tick, (time.monotonic_ns() - TICK_GRACE_NS - start) // period_ns)
                tick_end = start + tick * period_ns
                if aligned:
                    give_up = tick_end + period_ns // 2
                    while not finished.is_set() and self._straggling(tick_end):
                        now = time.monotonic_ns()
                        if now >= give_up:
                            break            # a request stuck in the kernel: not forever
                        await _wait(finished, min(give_up, now + STRAGGLER_POLL_NS))
                if finished.is_set():
                    break                    # the last interval: its real end, below
                sample = self._drain(tick_end if aligned else time.monotonic_ns())
                if sample is not None:
                    self.samples.append(sample)
                    yield sample
                if self._error:
                    self._stop.set()
            end = self._run_end() if aligned else time.monotonic_ns()
            sample = self._drain(max(end, self._covered + 1))
            if sample is not None:
                self.samples.append(sample)
                yield sample
        except (asyncio.CancelledError, GeneratorExit):
            self._interrupted = True
            raise
        finally:
            self._stop.set()
            self._finish(start)

    def _run_end(self) -> int:
        """When the last request (or ping pause) ended: the run's end, before bookkeeping."""
        lasts = [w.last_ns for w in self._workers if w.last_ns]
        if lasts and self.cfg.clock is time.monotonic_ns:
            return max(lasts)
        ends = [w.end_ns for w in self._workers if w.end_ns]
        return max(ends) if ends else time.monotonic_ns()

    def _straggling(self, tick_end: int) -> bool:
        """Some running worker has not handed over everything up to tick_end yet."""
        return any(w.covered_ns < tick_end for w in self._workers)

    def _drain(self, end: int) -> IoSample | None:
        """What the workers handed over, as the sample covering (previous end, end]."""
        batches: list[_Batch] = []
        for w in self._workers:
            out = w.out
            while out:
                batches.append(out.popleft())
        if not batches:
            return None
        in_order: list[int] = []
        warmups: list[int] = []
        writes = 0
        error = None
        for b in batches:
            in_order += b.in_order
            warmups += b.warmups
            writes += b.writes
            error = error or b.error
        stats = BatchStats.combine([b.part for b in batches])
        n = stats.count
        if error and not self._error:
            self._error = error
        if self.cfg.mode == WRITE:
            writes = n
        self._writes += writes
        self._reads += n - writes
        duration = (end - self._covered) / 1e9
        self._covered = end
        return IoSample(t=(end - self._start) / 1e9, duration=duration, jobs=self.cfg.jobs,
                        requests=n, iops=n / duration if duration > 0 else 0.0,
                        bytes_per_s=n * self.cfg.request_size / duration if duration > 0
                        else 0.0, stats=stats,
                        latencies_ns=in_order, warmups_ns=warmups, error=error)

    def _finish(self, start: int) -> None:
        stuck = 0
        give_up = time.monotonic() + JOIN_TIMEOUT
        for w in self._workers:
            w.join(max(0.0, give_up - time.monotonic()))
            stuck += w.is_alive()
        # anything flushed after the last yield (interrupted runs)
        late = self._drain(max(time.monotonic_ns(), self._covered + 1))
        if late is not None:
            self.samples.append(late)
        # the summary is the merge of the workers: histograms added, counts summed
        recorder = LatencyRecorder()
        workers: list[IoWorkerResult] = []
        for i, w in enumerate(self._workers):
            if w.is_alive():             # its recorder may still change: left out
                workers.append(IoWorkerResult(i, 0, w.warmups, 0, LatencySummary(
                    0, None, None, None, None, {}), stuck=True))
                continue
            recorder.merge(w.recorder)
            workers.append(IoWorkerResult(i, w.recorder.count, w.warmups, w.recorder.total,
                                          w.recorder.summary(), recorder=w.recorder))
        warmups = sum(w.warmups for w in workers)
        wall = self._run_end() - start
        error = self._error
        if stuck and not error:
            error = f"{stuck} worker(s) still blocked in a request after {JOIN_TIMEOUT:g} s"
        self.result = IoResult(
            path=self.target.path, description=self.target.describe(), mode=self.cfg.mode,
            request_size=self.cfg.request_size, jobs=self.cfg.jobs, direct=self.target.direct,
            requests=recorder.count, warmups=warmups, wall_ns=wall, reads=self._reads,
            writes=self._writes, latency=recorder.summary(), error=error,
            interrupted=self._interrupted, stuck_workers=stuck,
            loop="c" if uses_native_loop(self.cfg) else "python", recorder=recorder,
            samples=self.samples, workers=workers)


async def _wait(event: asyncio.Event, until_ns: int) -> None:
    """Until the event is set or the monotonic clock reaches until_ns."""
    delay = (until_ns - time.monotonic_ns()) / 1e9
    if delay > 0 and not event.is_set():
        try:
            await asyncio.wait_for(event.wait(), delay)
        except TimeoutError:
            pass


# -- ramp: 1, 2, 4 ... N workers, looking for the knee ------------------------------------------

@dataclass
class IoRampStep:
    jobs: int
    iops: float                 # achieved (wall) rate
    p99_ns: int | None
    avg_ns: float | None
    result: IoResult = field(repr=False)


@dataclass
class RampResult:
    steps: list[IoRampStep]
    knee: IoRampStep | None          # the step after which p99 grows faster than IOPS
    max_iops: IoRampStep | None
    min_latency: IoRampStep | None
    error: str | None = None
    interrupted: bool = False

    def to_json(self) -> dict:
        def step(s: IoRampStep) -> dict[str, Any]:
            return {"jobs": s.jobs, "iops": s.iops, "p99_ns": s.p99_ns, "avg_ns": s.avg_ns}

        def some(s: IoRampStep | None) -> dict[str, Any] | None:
            return None if s is None else step(s)
        return {"steps": [{**step(s), "summary": s.result.summary_json()} for s in self.steps],
                "knee": some(self.knee), "max_iops": some(self.max_iops),
                "min_latency": some(self.min_latency), "error": self.error,
                "interrupted": self.interrupted}


def ramp_jobs(max_jobs: int) -> list[int]:
    """1, 2, 4 ... and max_jobs itself when it is not a power of two."""
    steps, n = [], 1
    while n < max_jobs:
        steps.append(n)
        n *= 2
    steps.append(max_jobs)
    return steps


def find_knee(steps: list[IoRampStep]) -> IoRampStep | None:
    """The first step whose successor's p99 grows by a larger factor than its IOPS."""
    usable = [(s, s.p99_ns) for s in steps if s.iops > 0 and s.p99_ns]
    for (here, here_p99), (nxt, nxt_p99) in zip(usable, usable[1:]):
        if nxt_p99 / here_p99 > nxt.iops / here.iops:
            return here
    return usable[-1][0] if usable else None


def summarize_ramp(steps: list[IoRampStep], error: str | None = None,
                   interrupted: bool = False) -> RampResult:
    usable = [s for s in steps if s.iops > 0 and s.p99_ns]
    return RampResult(
        steps=steps, knee=find_knee(steps),
        max_iops=max(usable, key=lambda s: s.iops) if usable else None,
        min_latency=min((s for s in usable if s.avg_ns is not None),
                        key=lambda s: s.avg_ns or 0.0, default=None),
        error=error, interrupted=interrupted)


class IoRamp:
    """Runs the probe with 1, 2, 4 ... max_jobs workers for step_seconds each.

    Async iterator of IoSample (sample.jobs tells the step); `result` is a RampResult."""

    def __init__(self, target: IoTarget, cfg: IoConfig, max_jobs: int, step_seconds: float):
        if max_jobs < 1 or step_seconds <= 0:
            raise ValueError("a ramp needs max_jobs >= 1 and a positive step time")
        self.target, self.cfg = target, cfg
        self.jobs = ramp_jobs(max_jobs)
        self.step_seconds = step_seconds
        self.steps: list[IoRampStep] = []
        self.current: IoLatencyProbe | None = None
        self.result: RampResult | None = None
        self._stopped = False

    def stop(self) -> None:
        """End the ramp: the current step stops after its requests in flight, no next step."""
        self._stopped = True
        if self.current:
            self.current.stop()

    def __aiter__(self) -> AsyncIterator[IoSample]:
        return self._run()

    async def _run(self) -> AsyncIterator[IoSample]:
        error, interrupted = None, False
        try:
            for jobs in self.jobs:
                if self._stopped:
                    interrupted = True
                    break
                cfg = replace(self.cfg, jobs=jobs, count=None, deadline=self.step_seconds)
                self.current = IoLatencyProbe(self.target, cfg)
                try:
                    async for sample in self.current:
                        yield sample
                finally:
                    res = self.current.result
                    if res is not None:
                        self.steps.append(IoRampStep(jobs, res.iops_wall, res.latency.p("p99"),
                                                   res.latency.avg_ns, res))
                        error = error or res.error
                if error:
                    break
        except (asyncio.CancelledError, GeneratorExit):
            interrupted = True
            raise
        finally:
            self.result = summarize_ramp(self.steps, error, interrupted or self._stopped)
