"""Probe runs for the TUI: a request from the form, run by the probe layer in its own thread.

The form makes the same ProbeRequest as `--probe SPEC` (inspector.probes.request), which becomes
the same probe, driven by the same ProbeDriver as the CLI: on a private event loop in a daemon
thread, so a memcached ramp to thousands of connections or a hung O_DIRECT read never competes
with the UI loop. Every interval reaches the UI as a ProbeProgress message, the run's summary
as a last (final) one, then ProbeFinished. Stopping asks the probe to stop (partial figures
kept); the driver cancels it if it has not ended a few seconds later.
"""
from __future__ import annotations

import itertools
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Callable

from inspector.probes.base import KIND_TITLES, ProbeError, ProbeKind, RunStatus, RunSummary
from inspector.probes.request import ProbeRequest
from inspector.tui.messages import ProbeFinished, ProbeProgress, ProbeUpdate

if TYPE_CHECKING:
    from inspector.probes.base import Interval
    from inspector.probes.driver import ProbeDriver

__all__ = ["KINDS", "KIND_TITLES", "ProbeManager", "ProbeRequest", "ProbeRun", "RunState"]

KINDS = tuple(ProbeKind)
HISTORY = 1024           # interval updates kept per run (4 min at 4 Hz)
MANY_CONNECTIONS = 100   # at or above this a memcached run needs confirming
# raw IO latencies held before folding into the histogram: 2 MB, not the CLI's 32 MB (the
# TUI's probe may run for hours; bench_tui's Probes screen went 57 -> 63 MB in 15 s more)
TUI_RAW_LIMIT = 1 << 18
_ids = itertools.count(1)


class RunState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    DONE = "done"
    STOPPED = "stopped"
    FAILED = "failed"


def form_request(kind: Any, target: str, seconds: str, concurrency: str,
                 write: bool) -> ProbeRequest:
    """The Probes screen's form as a request; ValueError with a line for the operator."""
    target = target.strip()
    try:
        duration = float(seconds or "10")
        workers = int(concurrency or "1")
    except ValueError:
        raise ValueError("seconds and workers/connections must be numbers") from None
    if not target:
        raise ValueError("the probe needs a target")
    if not 0 < duration <= 24 * 3600:
        raise ValueError("seconds must be between 0 and 86400")
    if not 1 <= workers <= 100_000:
        raise ValueError("workers/connections must be between 1 and 100000")
    return ProbeRequest(kind=ProbeKind(kind), target=target, duration=duration,
                        concurrency=workers, write=write)


def describe(request: ProbeRequest) -> str:
    bound = f"{request.duration:g} s" + (f" or {request.count} ops" if request.count else "")
    extra = ""
    if request.kind == ProbeKind.IO:
        extra = f", {'WRITE' if request.write else 'read'}, {request.concurrency} worker(s)"
    elif request.kind == ProbeKind.MEMCACHED:
        extra = (f", {'set' if request.write else 'read-only get'} test, "
                 f"{request.concurrency} connection(s)")
    return f"{KIND_TITLES[request.kind]} on {request.target} for at most {bound}{extra}"


def needs_confirmation(request: ProbeRequest) -> str | None:
    """Why this run must be confirmed, or None."""
    if request.kind == ProbeKind.IO and request.write:
        return (f"writes a private temporary file inside {request.target} "
                f"(bound: {request.duration:g} s)")
    if request.kind == ProbeKind.IO and os.path.isdir(request.target):
        return (f"writes a private 64 MiB temporary file inside {request.target} to read from "
                f"(bound: {request.duration:g} s)")
    if request.kind == ProbeKind.MEMCACHED:
        many = " (many connections)" if request.concurrency >= MANY_CONNECTIONS else ""
        load = ("stores keys in its cache, which may evict real data" if request.write else
                "asks it for keys it does not hold (nothing is stored)")
        return (f"opens {request.concurrency} connections{many} to {request.target} and "
                f"{load} (bound: {request.duration:g} s)")
    return None


def open_tui_probe(request: ProbeRequest):
    """The request's probe, as everywhere else; only the IO probe's raw-latency buffer is
    smaller, a memory bound of this long-running process (not of the measurement)."""
    from inspector.probes.request import config_for, make_probe
    config = config_for(request)
    if request.kind == ProbeKind.IO:
        config = replace(config, raw_limit=TUI_RAW_LIMIT)
    return make_probe(config)


@dataclass
class ProbeRun:
    request: ProbeRequest
    post: Callable[[Any], None]            # App.post_message (thread-safe)
    run_id: int = field(default_factory=lambda: next(_ids))
    state: RunState = RunState.STARTING
    started: float = field(default_factory=time.monotonic)
    last: ProbeUpdate | None = None
    summary: RunSummary | None = None
    error: str | None = None
    # interval updates as received by the UI (appended on the UI thread only), for charts that
    # are (re)drawn later: a screen opened mid-run, the pinned comparison panel
    history: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    _thread: threading.Thread | None = None
    _driver: "ProbeDriver | None" = None
    _stop_requested: bool = False
    _errors: int = 0

    @property
    def title(self) -> str:
        return f"#{self.run_id} {KIND_TITLES[self.request.kind]} {self.request.target}"

    @property
    def active(self) -> bool:
        return self.state in (RunState.STARTING, RunState.RUNNING)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._thread_main, daemon=True,
                                        name=f"probe-{self.run_id}")
        self._thread.start()

    def stop(self) -> None:
        """Thread-safe: the probe stops with its partial figures."""
        self._stop_requested = True
        if self._driver is not None:
            self._driver.stop()

    def join(self, timeout: float) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def _thread_main(self) -> None:
        from inspector.probes.driver import ProbeDriver
        from inspector.tui.probe_adapters import final_update
        probe = None
        try:
            probe = open_tui_probe(self.request)
            self._driver = ProbeDriver(probe, self._on_interval)
            if self._stop_requested:
                self._driver.stop()
            self.state = RunState.RUNNING
            self._driver.run()
        except ProbeError as exc:               # the operator's problem, in one line
            self.error = str(exc)
        except Exception as exc:  # a bug: shown in the run's panel, never a traceback on screen
            self.error = f"{type(exc).__name__}: {exc}"
        result = probe.result if probe is not None else None
        if result is not None:
            self.summary = result.summary()
            if self.summary.status == RunStatus.FAILED and not self.error:
                self.error = self.summary.reason or self.summary.error or "failed"
            self.last = final_update(self.run_id, self.summary, self._errors)
            self.post(ProbeProgress(self.last))
        self.state = (RunState.FAILED if self.error else
                      RunState.STOPPED if self._stop_requested else RunState.DONE)
        self.post(ProbeFinished(self.run_id, self.summary, self.error))

    def _on_interval(self, interval: "Interval") -> None:
        from inspector.tui.probe_adapters import interval_update
        update = interval_update(self.run_id, interval)
        self._errors = interval.errors_total
        self.last = update
        self.post(ProbeProgress(update))


class ProbeManager:
    """All runs of this session; several may be active at once."""

    def __init__(self, post: Callable[[Any], None]):
        self.post = post
        self.runs: list[ProbeRun] = []

    def start(self, request: ProbeRequest) -> ProbeRun:
        run = ProbeRun(request=request, post=self.post)
        self.runs.append(run)
        run.start()
        return run

    def get(self, run_id: int) -> ProbeRun | None:
        return next((r for r in self.runs if r.run_id == run_id), None)

    def active(self) -> list[ProbeRun]:
        return [r for r in self.runs if r.active]

    def stop_all(self, timeout: float = 3.0) -> None:
        runs = self.active()
        for run in runs:
            run.stop()
        deadline = time.monotonic() + timeout
        for run in runs:
            run.join(max(0.0, deadline - time.monotonic()))
