"""Probe runs for the TUI: each request (the form, `inspector --probe SPEC`) run in a process
of its own, and what the UI keeps of it.

A run is `python -m inspector.tui.probes.process REQUEST`: the CLI's request -> probe ->
ProbeDriver path (inspector.probes.child), so the UI's drawing, resizing and key handling never
share a GIL, an event loop or a core's time slice with the load. The process streams its
Intervals and its RunSummary back as JSON lines; a reader thread here only parses them and
posts ProbeProgress / ProbeFinished, and the UI thread applies them to the run (LiveRun): a
screen never sees a run whose state is ahead of its figures. Stopping sends SIGTERM (the probe
stops with its partial figures, as `timeout 5 inspector probe ...` does) and SIGKILL
KILL_AFTER_S later.

What a run keeps is bounded: the last POINTS intervals as they came, a histogram of fixed size
(LiveHistogram), then the summary with its histogram in compact form (Buckets); never the
raw samples. Fifty runs in one session cost a few megabytes in this process; the probes' own
memory goes with their processes.
"""
from __future__ import annotations

import itertools
import json
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
from typing import Any

from inspector.probes.base import Interval, ProbeError, RunStatus, RunSummary
from inspector.probes.request import GRACE_S, ProbeRequest
from inspector.tui.messages import ProbeFinished, ProbeProgress
from inspector.tui.probes.histogram import Buckets, LiveHistogram

__all__ = ["LiveRun", "ProbeManager", "ProbeRequest", "RunState", "form_request"]

POINTS = 480            # intervals kept per run (2 minutes at 4 Hz): what a chart shows
LATE_S = 0.5            # an interval handled this long after the process made it arrived late
# SIGTERM, then SIGKILL: the process's driver cancels a run that has not stopped GRACE_S
# after the stop, and then has a second for its summary to get out
KILL_AFTER_S = GRACE_S + 1.0
STDERR_KEPT = 2048      # the process's last words, for a run that dies without a summary
_ids = itertools.count(1)


class RunState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    DONE = "done"           # completed, nothing failed
    ERRORS = "errors"       # ended, but some operations failed (a server down, failed gets)
    STOPPED = "stopped"     # the operator (or the terminal going away) stopped it
    FAILED = "failed"       # nothing could be measured: `error` says why


def form_request(kind: Any, target: str, seconds: str, concurrency: str,
                 write: bool) -> ProbeRequest:
    """The Probes form's fields as a request; ProbeError when a number is not one. Its limits
    are the request's own (ProbeRequest.validate, via inspector.probes.request.check_target)."""
    from inspector.probes.request import KINDS
    info = KINDS[kind]
    try:
        duration = float(seconds or "10")
        count = int(concurrency or info.default_concurrency)
    except ValueError:
        what = f"seconds and {info.concurrency}" if info.concurrency else "seconds"
        raise ProbeError(f"{what} must be numbers") from None
    return ProbeRequest(kind=kind, target=target.strip(), duration=duration, concurrency=count,
                        write=write and info.write is not None)


# --- one run ---------------------------------------------------------------------------------
@dataclass
class LiveRun:
    """One run as the TUI watches it: its process, and its figures as they came. Everything
    but the process handling changes on the UI thread only (received, finished)."""
    request: ProbeRequest
    post: Callable[[Any], object]          # App.post_message (thread-safe)
    run_id: int = field(default_factory=lambda: next(_ids))
    state: RunState = RunState.STARTING
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    summary: RunSummary | None = None      # once it has ended, if it measured anything
    error: str | None = None               # FAILED: why; ERRORS: what failed
    notes: list[str] = field(default_factory=list)
    verdicts: list[dict[str, str]] = field(default_factory=list)   # the CLI's (dns)
    pid: int | None = None
    intervals: deque[Interval] = field(default_factory=lambda: deque(maxlen=POINTS))
    late: deque[float] = field(default_factory=lambda: deque(maxlen=POINTS))  # per interval
    histogram: LiveHistogram = field(default_factory=LiveHistogram)
    max_ns: float | None = None            # the largest interval max so far
    late_count: int = 0
    late_max: float = 0.0
    launcher: Launcher | None = None
    _proc: subprocess.Popen[bytes] | None = None
    _reader: threading.Thread | None = None
    _stop_requested: bool = False
    _stderr: bytes = b""
    _last_word: ProbeFinished | None = None     # what the reader posted last

    @property
    def title(self) -> str:
        return f"#{self.run_id} {self.request.info.title} {self.target_text}"

    @property
    def target_text(self) -> str:
        return self.request.target or "resolv.conf"

    @property
    def active(self) -> bool:
        return self.state in (RunState.STARTING, RunState.RUNNING)

    @property
    def last(self) -> Interval | None:
        """The latest interval."""
        return self.intervals[-1] if self.intervals else None

    @property
    def errors(self) -> int:
        """Failed operations so far: the summary's once the run has ended (a memcached run the
        server refused has no interval, and its refusal is its error), else the intervals'."""
        if self.summary is not None:
            return self.summary.errors
        last = self.last
        return last.errors_total if last is not None else 0

    @property
    def center(self) -> str:
        """What the chart's first series is: the interval's median, or its mean where the
        probe gives none."""
        last = self.last
        return last.center if last is not None else "p50"

    def __iter__(self) -> Iterator[Interval]:
        return iter(self.intervals)

    # ---------------------------------------------------------------- the UI thread
    def received(self, message: ProbeProgress, now: float | None = None) -> None:
        """An interval (or the start) from the process; marked late if the stream held it up
        (the UI was busy, the pipe was full) more than LATE_S."""
        if self.state == RunState.STARTING:
            self.state = RunState.RUNNING
        if message.notes is not None:
            self.notes = list(message.notes)
        interval = message.interval
        if interval is None:
            return
        late = 0.0
        if message.sent is not None:
            delay = (time.monotonic() if now is None else now) - message.sent
            if delay > LATE_S:
                late = delay
                self.late_count += 1
                self.late_max = max(self.late_max, delay)
        self.intervals.append(interval)
        self.late.append(late)
        if interval.max_ns is not None:
            self.max_ns = interval.max_ns if self.max_ns is None else max(self.max_ns,
                                                                         interval.max_ns)
        if interval.dns is not None:        # each server's latency as it is: exact values
            for server in interval.dns.servers:
                if server.kind == "answered" and server.latency_ms is not None:
                    self.histogram.add(server.latency_ms * 1e6)
        else:
            self.histogram.add_interval(interval.ops, interval.p50_ns, interval.p99_ns,
                                        interval.max_ns,
                                        interval.io.min_ns if interval.io else None)

    def finished(self, message: ProbeFinished) -> None:
        self.state = RunState(message.state)
        self.summary = message.summary
        self.error = message.error
        self.verdicts = message.verdicts

    # ---------------------------------------------------------------- its process
    def start(self) -> None:
        from inspector.probes.child import command
        from inspector.tui.probes.process import MODULE
        argv = command(self.request, MODULE)
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
        KILL_AFTER_S if it is still there."""
        self._stop_requested = True
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            return
        timer = threading.Timer(KILL_AFTER_S, self.kill)
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
        """Wait for the run's process to end (reaped, its last message posted)."""
        if self._reader is not None:
            self._reader.join(timeout)
            return not self._reader.is_alive()
        return True

    @property
    def process_alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ---------------------------------------------------------------- reader threads
    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        with self._proc.stderr:
            for line in self._proc.stderr:
                self._stderr = (self._stderr + line)[-STDERR_KEPT:]

    def _read(self) -> None:
        """Parses the stream and posts it; changes nothing of the run but its process."""
        assert self._proc is not None and self._proc.stdout is not None
        ended = False
        summary: RunSummary | None = None
        error: str | None = None
        verdicts: list[dict[str, str]] = []
        errors_seen = 0
        try:
            for raw in self._proc.stdout:
                try:
                    doc = json.loads(raw)
                    kind = doc["type"]
                    if kind == "interval":
                        interval = Interval.from_json(doc["interval"])
                        errors_seen = interval.errors_total
                        self.post(ProbeProgress(self.run_id, interval, doc.get("sent")))
                    elif kind == "started":
                        self.post(ProbeProgress(self.run_id,
                                                notes=[str(n) for n in doc.get("notes") or []]))
                    elif kind == "summary":
                        summary = _compact(RunSummary.from_json(doc["summary"]))
                    elif kind == "verdicts":
                        verdicts = [{str(k): str(v) for k, v in f.items()}
                                    for f in doc.get("verdicts") or []]
                    elif kind == "error":
                        error = str(doc.get("message") or "failed")
                    elif kind == "end":
                        ended = True
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    error = error or f"unreadable line from the probe process ({exc})"
        finally:
            self._proc.stdout.close()       # no descriptor left open per finished run
            code = self._proc.wait()
            self.ended = time.monotonic()
        state, reason = outcome_of(summary, error, code, ended, self._stop_requested,
                                   errors_seen, self._stderr)
        self._last_word = ProbeFinished(self.run_id, state, summary, reason or error, verdicts)
        self.post(self._last_word)


def outcome_of(s: RunSummary | None, error: str | None, code: int, ended: bool,
               stop_requested: bool, errors_seen: int = 0,
               stderr: bytes = b"") -> tuple[RunState, str | None]:
    """How a run ended, from what its process said: its state and, where it did not simply
    complete, why."""
    if error and s is None:
        return RunState.FAILED, error
    if s is None:
        if stop_requested:
            return RunState.STOPPED, None
        why = f"the probe process ended ({_exit_text(code)}) before any figure"
        last = stderr.decode("utf-8", "replace").strip().splitlines()
        return RunState.FAILED, why + (f": {last[-1][:200]}" if last else "")
    if s.status == RunStatus.FAILED:
        return RunState.FAILED, s.reason or s.error or "failed"
    failed = failure_reason(s, errors_seen)
    if failed and s.requests and not s.latency.count:
        return RunState.FAILED, failed         # nothing succeeded
    if stop_requested or s.status == RunStatus.STOPPED:
        return RunState.STOPPED, failed
    if s.status == RunStatus.DEADLINE:
        return RunState.ERRORS, s.reason or "ended by its hard deadline"
    if not ended and code:
        return RunState.ERRORS, f"the probe process ended ({_exit_text(code)})"
    return (RunState.ERRORS, failed) if failed else (RunState.DONE, None)


def failure_reason(s: RunSummary, errors_seen: int = 0) -> str | None:
    """What failed in a run that measured something, in one line with the reason."""
    if s.dns is not None:
        bad = [f"{server} {f.kind}" + (f" ({f.detail})" if f.detail else "")
               for server, f in s.dns.servers.items() if f.kind != "answered"]
        if bad:
            return "; ".join(bad)
        errors = s.errors or errors_seen
        return f"{errors} failed queries in earlier rounds" if errors else None
    if s.memcached is not None and s.memcached.errors:
        kinds = ", ".join(f"{k} {v}" for k, v in s.memcached.errors.items())
        return f"failed requests: {kinds}" + (f" ({s.reason})" if s.reason else "")
    if s.error and s.status != RunStatus.STOPPED:
        return s.error
    return None


def _compact(s: RunSummary) -> RunSummary:
    """What a finished run keeps: the histogram in compact form and the figures, not the
    per-interval lists (the run's intervals are kept as they came)."""
    # Buckets reads as the list of pairs it replaces (a finished run is never serialised)
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
    """All runs of this session; several may be active at once. The app hands it the runs'
    messages on the UI thread (progress, finished)."""

    def __init__(self, post: Callable[[Any], object]):
        self.post = post
        self.runs: list[LiveRun] = []
        self._launcher: Launcher | None = None
        self.priority: UiPriority | None = None

    def start(self, request: ProbeRequest) -> LiveRun:
        if self._launcher is None:
            self._launcher = Launcher()
            launcher = self._launcher
            self.priority = UiPriority(lambda: launcher.tid)
        run = LiveRun(request=request, post=self.post, launcher=self._launcher)
        self.runs.append(run)
        run.start()
        if self.priority is not None:
            self.priority.lower()
        return run

    def progress(self, message: ProbeProgress) -> LiveRun | None:
        """An interval (or the start) of a run, applied to it: the run, if it is ours."""
        run = self.get(message.run_id)
        if run is not None:
            run.received(message)
        return run

    def finish(self, message: ProbeFinished) -> LiveRun | None:
        """A run has ended, applied to it; the UI's priority comes back when none is left."""
        run = self.get(message.run_id)
        if run is not None:
            run.finished(message)
        if self.priority is not None and not self.active():
            self.priority.restore()
        return run

    def get(self, run_id: int | None) -> LiveRun | None:
        return next((r for r in self.runs if r.run_id == run_id), None)

    def active(self) -> list[LiveRun]:
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
        for run in runs:        # leaving: their last message may never be handled
            if run.active and run._last_word is not None:
                run.finished(run._last_word)
