"""Probe runs for the TUI: a request from the form (or `--probe SPEC`), run in a child process.

The form makes the same ProbeRequest as `--probe SPEC` (inspector.probes.request); each run is
`python -m inspector.probes.child REQUEST` (the CLI's config_for -> probe -> ProbeDriver path)
in a process of its own, so the UI's drawing, resizing and key handling never share a GIL, an
event loop or a core's time slice with the load. The child streams its Intervals and its
RunSummary back as JSON lines; a reader thread here turns each into a ProbeProgress message,
then ProbeFinished. Stopping sends SIGTERM (the probe stops with its partial figures, as
`timeout 5 inspector probe ...` does) and SIGKILL after KILL_GRACE_S.

What a run keeps is bounded (RunHistory): the last POINTS interval figures, a histogram of
fixed size, the last and the final update; never the raw samples. Fifty runs in one session
cost a few megabytes in this process; the probes' own memory goes with their processes.
"""
from __future__ import annotations

import itertools
import json
import math
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, NamedTuple

from inspector.probes.base import (
    Interval,
    ProbeError,
    ProbeKind,
    RunStatus,
    RunSummary,
)
from inspector.probes.request import KINDS as KIND_INFO
from inspector.probes.request import ProbeRequest
from inspector.tui.messages import ProbeFinished, ProbeProgress, ProbeUpdate
from inspector.tui.probes.target_check import NoAnswer, target_kind

__all__ = ["KINDS", "KIND_TITLES", "ProbeManager", "ProbeRequest", "ProbeRun", "RunState",
           "check_target", "describe", "form_request", "needs_confirmation"]

KINDS = tuple(ProbeKind)
KIND_TITLES = {kind: info.title for kind, info in KIND_INFO.items()}
POINTS = 480            # interval figures kept per run (2 minutes at 4 Hz): what a chart shows
LATE_S = 0.5            # an interval handled this long after the child made it arrived late
KILL_GRACE_S = 8.0      # SIGTERM, then SIGKILL: past the driver's own 5 s cancel grace
MANY_CONNECTIONS = 100  # at or above this a memcached run needs confirming
STDERR_KEPT = 2048      # the child's last words, for a run that dies without a summary
_ids = itertools.count(1)


class RunState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    DONE = "done"           # completed, nothing failed
    ERRORS = "errors"       # ended, but some operations failed (a server down, failed gets)
    STOPPED = "stopped"     # the operator (or the terminal going away) stopped it
    FAILED = "failed"       # nothing could be measured: `error` says why


# --- the form's request, checked for its kind ----------------------------------------------
def form_request(kind: Any, target: str, seconds: str, concurrency: str,
                 write: bool) -> ProbeRequest:
    """The Probes screen's form as a request; ValueError with a line for the operator."""
    kind = ProbeKind(kind)
    target = target.strip()
    try:
        duration = float(seconds or "10")
        workers = int(concurrency or KIND_INFO[kind].default_concurrency)
    except ValueError:
        raise ValueError("seconds and workers/connections must be numbers") from None
    if not target and kind != ProbeKind.DNS:
        raise ValueError("the probe needs a target")
    if not 0 < duration <= 24 * 3600:
        raise ValueError("seconds must be between 0 and 86400")
    if not 1 <= workers <= 100_000:
        raise ValueError("workers/connections must be between 1 and 100000")
    return ProbeRequest(kind=kind, target=target, duration=duration, concurrency=workers,
                        write=write and kind != ProbeKind.DNS)


def check_target(request: ProbeRequest) -> str | None:
    """Why this request's target does not suit its kind (one line), or None. Checked before
    the confirmation, so a dialog never names a target the run would refuse."""
    from inspector.probes.request import config_for
    target = request.target
    if request.kind == ProbeKind.IO:
        try:    # in a child, bounded: the UI's process never waits on a hung mount
            kind = target_kind(target)
        except NoAnswer as exc:
            return str(exc)
        if request.write and kind != "dir":
            return (f"a write probe needs a directory (it writes a private temporary file "
                    f"there): {target} is not one")
        if kind == "missing":
            return f"{target}: no such file, directory or block device"
    elif request.kind == ProbeKind.MEMCACHED and ("/" in target
                                                  or any(c.isspace() for c in target)):
        return f"{target}: not a memcached address (HOST:PORT, e.g. 127.0.0.1:11211)"
    try:
        config = config_for(request)
    except ProbeError as exc:
        return str(exc)
    if request.kind == ProbeKind.DNS:
        return _dns_servers_problem(config)
    return None


def _dns_servers_problem(config: Any) -> str | None:
    """A DNS target must name at least one nameserver: glibc's fallback to 127.0.0.1 for a
    file without one is not something the operator asked to probe."""
    if config.servers:
        return None
    from inspector.discover.resolver_conf import parse_resolv_conf
    from inspector.probes.dns.run import read_resolv_conf_bounded
    path = config.resolv_conf or "/etc/resolv.conf"
    try:    # in a child, bounded: the UI's process never waits on a hung mount or a FIFO
        text = read_resolv_conf_bounded(path)
    except ProbeError as exc:
        return str(exc)
    parsed = parse_resolv_conf(text)
    if parsed.nameserver_defaulted or not parsed.used_nameservers:
        return (f"{path} names no nameserver (glibc would query 127.0.0.1): give a "
                "resolv.conf with nameserver lines, or addresses ADDR[:PORT],...")
    return None


def describe(request: ProbeRequest) -> str:
    bound = f"{request.duration:g} s" + (f" or {request.count} ops" if request.count else "")
    extra = ""
    if request.kind == ProbeKind.IO:
        extra = f", {'WRITE' if request.write else 'read'}, {request.concurrency} worker(s)"
    elif request.kind == ProbeKind.MEMCACHED:
        extra = (f", {'set' if request.write else 'read-only get'} test, "
                 f"{request.concurrency} connection(s)")
    target = request.target or "this host's resolver configuration"
    return f"{KIND_TITLES[request.kind]} on {target} for at most {bound}{extra}"


def needs_confirmation(request: ProbeRequest) -> str | None:
    """Why this run must be confirmed, or None."""
    if request.kind == ProbeKind.IO and request.write:
        return (f"writes a private temporary file inside {request.target} "
                f"(bound: {request.duration:g} s)")
    if request.kind == ProbeKind.IO and _maybe_dir(request.target):
        return (f"writes a private 64 MiB temporary file inside {request.target} to read from "
                f"(bound: {request.duration:g} s)")
    if request.kind == ProbeKind.MEMCACHED:
        many = " (many connections)" if request.concurrency >= MANY_CONNECTIONS else ""
        load = ("stores keys in its cache, which may evict real data" if request.write else
                "asks it for keys it does not hold (nothing is stored)")
        return (f"opens {request.concurrency} connections{many} to {request.target} and "
                f"{load} (bound: {request.duration:g} s)")
    return None


def _maybe_dir(path: str) -> bool:
    """A directory, or a path that does not answer (asked to confirm rather than not)."""
    try:
        return target_kind(path) == "dir"
    except NoAnswer:
        return True


# --- what a run keeps: bounded ---------------------------------------------------------------
class Point(NamedTuple):
    """One interval as charted."""
    t: float
    ops_per_s: float
    p50: float | None           # ns; the interval's mean when the probe gives no median
    p99: float | None
    max: float | None
    late: float                 # seconds the sample was held up on its way (0: on time)


class LiveHistogram:
    """A latency histogram of fixed size (BINS_PER_DECADE log bins from 100 ns to 100 s).

    While a run goes, the child streams each interval's p50/p99/max, not its requests; each
    interval adds its operations spread over [low, p50] (half), [p50, p99] (49%) and
    [p99, max] (1%), evenly in log space: a sketch of the distribution that moves with the
    run. Exact values (a DNS round's per-server latencies) go in as they are. When the run
    ends the summary's exact histogram replaces it."""
    BINS_PER_DECADE = 10
    LOW_NS = 100.0
    DECADES = 9

    def __init__(self) -> None:
        self.counts = [0.0] * (self.BINS_PER_DECADE * self.DECADES)
        self.total = 0.0

    def _index(self, ns: float) -> float:
        pos = math.log10(max(ns, self.LOW_NS) / self.LOW_NS) * self.BINS_PER_DECADE
        return min(pos, len(self.counts) - 1e-9)

    def add(self, ns: float, weight: float = 1.0) -> None:
        self.counts[int(self._index(ns))] += weight
        self.total += weight

    def spread(self, low: float, high: float, weight: float, falling: bool = False) -> None:
        """`weight` over [low, high] in log space: evenly, or `falling` linearly to nothing at
        `high` (latency tails thin out: most of an interval's p50..p99 lies near its p50)."""
        a, b = self._index(low), self._index(max(low, high))
        if b - a < 1e-9:
            self.add(low, weight)
            return

        def mass(x: float) -> float:      # share of the weight in [a, x]
            f = (x - a) / (b - a)
            return 2 * f - f * f if falling else f
        i = int(a)
        while i < b:
            self.counts[i] += weight * (mass(min(i + 1, b)) - mass(max(i, a)))
            i += 1
        self.total += weight

    def add_interval(self, ops: int, p50: float | None, p99: float | None, mx: float | None,
                     low: float | None = None) -> None:
        if ops <= 0 or p50 is None:
            return
        p99 = max(p99 or p50, p50)
        mx = max(mx or p99, p99)
        low = min(low if low else p50 * 0.7, p50)
        self.spread(low, p50, ops * 0.5)
        self.spread(p50, p99, ops * 0.49, falling=True)
        self.spread(p99, mx, ops * 0.01, falling=True)

    def buckets(self) -> list[tuple[int, int]]:
        """(upper bound ns, count) of the non-empty bins, as LatencyRecorder.buckets()."""
        out = []
        for i, c in enumerate(self.counts):
            if c >= 0.5:
                out.append((int(self.LOW_NS * 10 ** ((i + 1) / self.BINS_PER_DECADE)), round(c)))
        return out

    def percentile(self, q: float) -> float | None:
        if self.total <= 0:
            return None
        want, seen = self.total * q / 100.0, 0.0
        for i, c in enumerate(self.counts):
            seen += c
            if seen >= want and c > 0:
                return self.LOW_NS * 10 ** ((i + 0.5) / self.BINS_PER_DECADE)
        return None


class RunHistory:
    """What the UI keeps of a run, appended on the UI thread: bounded, whatever its length."""

    def __init__(self, capacity: int = POINTS):
        self.points: deque[Point] = deque(maxlen=capacity)
        self.servers: deque[dict[str, float | None]] = deque(maxlen=capacity)   # dns rounds
        self.kinds: dict[str, str] = {}        # dns: each server's latest kind
        self.histogram = LiveHistogram()
        self.last: ProbeUpdate | None = None   # the latest interval
        self.final: ProbeUpdate | None = None  # the run's summary as an update
        self.primary = "p50"
        self.max_ns: float | None = None       # the largest interval max so far
        self.intervals = 0
        self.late = 0
        self.late_max = 0.0

    def append(self, update: ProbeUpdate, now: float | None = None) -> None:
        """Called by the app when the update reaches the UI; marks it late if the stream held
        it up (the UI was busy, the pipe was full) more than LATE_S."""
        extra = update.extra
        if extra.final:
            self.final = update
            return
        if update.sent is not None:
            delay = (time.monotonic() if now is None else now) - update.sent
            if delay > LATE_S:
                update.late = delay
                self.late += 1
                self.late_max = max(self.late_max, delay)
        self.intervals += 1
        self.last = update
        self.primary = extra.primary
        if update.max is not None:
            self.max_ns = update.max if self.max_ns is None else max(self.max_ns, update.max)
        self.points.append(Point(update.elapsed, update.ops_per_s, update.p50, update.p99,
                                 update.max, update.late))
        if extra.per_server_ms is not None:
            self.servers.append(dict(extra.per_server_ms))
            self.kinds.update(extra.per_server_kind or {})
            for ms in extra.per_server_ms.values():
                if ms is not None:
                    self.histogram.add(ms * 1e6)
        else:
            self.histogram.add_interval(update.interval_ops, update.p50, update.p99,
                                        update.max, extra.min_ns)

    def __len__(self) -> int:
        return len(self.points)

    def __iter__(self) -> Iterator[Point]:
        return iter(self.points)


# --- one run ---------------------------------------------------------------------------------
@dataclass
class ProbeRun:
    request: ProbeRequest
    post: Callable[[Any], object]          # App.post_message (thread-safe)
    run_id: int = field(default_factory=lambda: next(_ids))
    state: RunState = RunState.STARTING
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    summary: RunSummary | None = None
    error: str | None = None               # FAILED: why; ERRORS: what failed
    notes: list[str] = field(default_factory=list)
    pid: int | None = None
    history: RunHistory = field(default_factory=RunHistory)
    launcher: Launcher | None = None
    _proc: subprocess.Popen | None = None
    _reader: threading.Thread | None = None
    _stop_requested: bool = False
    _stderr: bytes = b""

    @property
    def title(self) -> str:
        return f"#{self.run_id} {KIND_TITLES[self.request.kind]} {self.target_text}"

    @property
    def target_text(self) -> str:
        return self.request.target or "resolv.conf"

    @property
    def active(self) -> bool:
        return self.state in (RunState.STARTING, RunState.RUNNING)

    @property
    def last(self) -> ProbeUpdate | None:
        """The final figures once the run has ended, else its latest interval."""
        return self.history.final or self.history.last

    def start(self) -> None:
        from inspector.probes.child import command
        argv = command(self.request)
        if self.launcher is not None:
            self._proc = self.launcher.popen(argv)
        else:
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          close_fds=True)
        self.pid = self._proc.pid
        self._reader = threading.Thread(target=self._read, daemon=True,
                                        name=f"probe-{self.run_id}")
        self._reader.start()
        threading.Thread(target=self._read_stderr, daemon=True,
                         name=f"probe-{self.run_id}-stderr").start()

    def stop(self) -> None:
        """Thread-safe: SIGTERM (the probe stops with its partial figures), SIGKILL after
        KILL_GRACE_S if it is still there."""
        self._stop_requested = True
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            return
        timer = threading.Timer(KILL_GRACE_S, self.kill)
        timer.daemon = True
        timer.start()

    def kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass

    def join(self, timeout: float) -> bool:
        """Wait for the run to end (its process reaped, its last message posted)."""
        if self._reader is not None:
            self._reader.join(timeout)
            return not self._reader.is_alive()
        return True

    @property
    def process_alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ---------------------------------------------------------------- reader thread
    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        with self._proc.stderr:
            for line in self._proc.stderr:
                self._stderr = (self._stderr + line)[-STDERR_KEPT:]

    def _read(self) -> None:
        from inspector.tui.probes.adapters import final_update, interval_update
        assert self._proc is not None and self._proc.stdout is not None
        ended = False
        try:
            for raw in self._proc.stdout:
                try:
                    doc = json.loads(raw)
                    kind = doc["type"]
                    if kind == "interval":
                        interval = Interval.from_json(doc["interval"])
                        if self.state == RunState.STARTING:
                            self.state = RunState.RUNNING
                        self.post(ProbeProgress(interval_update(self.run_id, interval,
                                                                sent=doc.get("sent"))))
                    elif kind == "started":
                        self.notes = [str(n) for n in doc.get("notes") or []]
                        self.state = RunState.RUNNING
                    elif kind == "summary":
                        self.summary = _bounded(RunSummary.from_json(doc["summary"]))
                    elif kind == "error":
                        self.error = str(doc.get("message") or "failed")
                    elif kind == "end":
                        ended = True
                except (ValueError, KeyError, TypeError) as exc:
                    self.error = self.error or f"unreadable line from the probe process ({exc})"
        finally:
            self._proc.stdout.close()       # no descriptor left open per finished run
            code = self._proc.wait()
            self.ended = time.monotonic()
        self.state, reason = self._outcome(code, ended)
        if reason:
            self.error = reason
        if self.summary is not None:
            errors = self.history.last.errors if self.history.last else 0
            self.post(ProbeProgress(final_update(self.run_id, self.summary, errors)))
        self.post(ProbeFinished(self.run_id, self.summary, self.error))

    def _outcome(self, code: int, ended: bool) -> tuple[RunState, str | None]:
        s = self.summary
        if self.error and s is None:
            return RunState.FAILED, self.error
        if s is None:
            if self._stop_requested:
                return RunState.STOPPED, None
            why = f"the probe process ended ({_exit_text(code)}) before any figure"
            last = self._stderr.decode("utf-8", "replace").strip().splitlines()
            return RunState.FAILED, why + (f": {last[-1][:200]}" if last else "")
        if s.status == RunStatus.FAILED:
            return RunState.FAILED, s.reason or s.error or "failed"
        failed = failure_reason(s, self.history)
        if failed and s.requests and _none_succeeded(s):
            return RunState.FAILED, failed
        if self._stop_requested or s.status == RunStatus.STOPPED:
            return RunState.STOPPED, failed
        if s.status == RunStatus.DEADLINE:
            return RunState.ERRORS, s.reason or "ended by its hard deadline"
        if not ended and code:
            return RunState.ERRORS, f"the probe process ended ({_exit_text(code)})"
        return (RunState.ERRORS, failed) if failed else (RunState.DONE, None)


def failure_reason(s: RunSummary, history: RunHistory | None = None) -> str | None:
    """What failed in a run that measured something, in one line with the reason."""
    if s.dns is not None:
        bad = [f"{server} {f.kind}" + (f" ({f.detail})" if f.detail else "")
               for server, f in s.dns.servers.items() if f.kind != "answered"]
        if bad:
            return "; ".join(bad)
        errors = history.last.errors if history and history.last else 0
        return f"{errors} failed queries in earlier rounds" if errors else None
    if s.memcached is not None and s.memcached.errors:
        kinds = ", ".join(f"{k} {v}" for k, v in s.memcached.errors.items())
        return f"failed requests: {kinds}" + (f" ({s.reason})" if s.reason else "")
    if s.error and s.status != RunStatus.STOPPED:
        return s.error
    return None


def _none_succeeded(s: RunSummary) -> bool:
    return not s.latency.count


def _bounded(s: RunSummary) -> RunSummary:
    """What a finished run keeps: the histogram (compact) and figures, not the per-interval
    lists."""
    from inspector.tui.probes.adapters import Buckets
    # a Buckets reads as the list of pairs it replaces (a finished run is never serialised)
    return replace(s, histogram=Buckets(s.histogram),  # type: ignore[arg-type]
                   interval_p99_ns=[], interval_avg_ns=[])


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


class Launcher:
    """Starts the probe processes from a thread of its own, which keeps the UI's original
    priority: a child inherits its nice value from the thread that forks it, and the UI's
    threads are reniced while probes run (UiPriority)."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[list[str], queue.SimpleQueue]] = \
            queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, name="probe-launcher", daemon=True)
        self.tid: int | None = None      # its native id, once it runs
        self._thread.start()

    def popen(self, argv: list[str]) -> subprocess.Popen:
        answer: queue.SimpleQueue = queue.SimpleQueue()
        self._requests.put((argv, answer))
        result = answer.get()
        if isinstance(result, BaseException):
            raise result
        return result

    def _main(self) -> None:
        self.tid = threading.get_native_id()
        while True:
            argv, answer = self._requests.get()
            try:
                answer.put(subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            close_fds=True))
            except OSError as exc:
                answer.put(exc)


class UiPriority:
    """While probes run, the UI's threads yield the CPU to them: nice +UI_NICE on every thread
    of this process but the launcher's. On a small machine (2 cores: the load, the server it
    loads, the terminal) a screen switch or a resize otherwise takes its CPU time from the
    measurement. Back to the original priority when the last run ends, where that is allowed
    (root, or RLIMIT_NICE); an unprivileged UI stays reniced, which only matters when the CPU
    is contended, and then the probes should win."""
    UI_NICE = 10

    def __init__(self, keep: Callable[[], int | None]):
        self.keep = keep
        self.base = _nice_of(0)
        self.lowered = False

    def _set(self, value: int) -> bool:
        keep = self.keep()
        ok = True
        for tid in _threads():
            if tid == keep:
                continue
            try:
                os.setpriority(os.PRIO_PROCESS, tid, value)
            except PermissionError:
                ok = False
            except OSError:             # the thread has just ended
                pass
        return ok

    def lower(self) -> None:
        if self.base is not None and not self.lowered:
            self._set(min(19, self.base + self.UI_NICE))
            self.lowered = True

    def restore(self) -> None:
        if self.base is not None and self.lowered and self._set(self.base):
            self.lowered = False


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return []


def _nice_of(tid: int) -> int | None:
    try:
        return os.getpriority(os.PRIO_PROCESS, tid)
    except OSError:
        return None


class ProbeManager:
    """All runs of this session; several may be active at once."""

    def __init__(self, post: Callable[[Any], object]):
        self.post = post
        self.runs: list[ProbeRun] = []
        self._launcher: Launcher | None = None
        self.priority: UiPriority | None = None

    def start(self, request: ProbeRequest) -> ProbeRun:
        if self._launcher is None:
            self._launcher = Launcher()
            launcher = self._launcher
            self.priority = UiPriority(lambda: launcher.tid)
        run = ProbeRun(request=request, post=self.post, launcher=self._launcher)
        self.runs.append(run)
        run.start()
        if self.priority is not None:
            self.priority.lower()
        return run

    def ended(self) -> None:
        """A run has ended (the UI thread, on ProbeFinished): the UI's priority comes back
        when none is left."""
        if self.priority is not None and not self.active():
            self.priority.restore()

    def get(self, run_id: int | None) -> ProbeRun | None:
        return next((r for r in self.runs if r.run_id == run_id), None)

    def active(self) -> list[ProbeRun]:
        return [r for r in self.runs if r.active]

    def stop_all(self, timeout: float = 3.0) -> None:
        """Stop every run, wait up to `timeout`, then kill what is left and reap it: no probe
        process outlives the TUI."""
        runs = [r for r in self.runs if r.active or r.process_alive]
        for run in runs:
            run.stop()
        deadline = time.monotonic() + timeout
        for run in runs:
            run.join(max(0.0, deadline - time.monotonic()))
        for run in runs:
            if run.process_alive:
                run.kill()
                run.join(1.0)
