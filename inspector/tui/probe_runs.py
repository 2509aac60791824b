"""Probe runs for the TUI: a request from the form, a run in its own thread and event loop.

Each probe (inspector.probes.*) is an async iterator of interval samples plus a final summary.
A run drives it on a private asyncio loop in a daemon thread, so a memcached ramp to thousands of
connections or a hung O_DIRECT read never competes with the UI loop; every interval reaches the
UI as a ProbeProgress message. Stopping cancels the task from the UI thread.
"""
from __future__ import annotations

import asyncio
import importlib
import importlib.util
import itertools
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

from inspector.tui.messages import ProbeFinished, ProbeProgress, ProbeUpdate

KINDS = ("io", "memcached", "dns")
KIND_TITLES = {"io": "IO latency", "memcached": "memcached", "dns": "DNS"}
PROBE_MODULES = {"io": "inspector.probes.io_latency", "memcached": "inspector.probes.memcached",
                 "dns": "inspector.probes.dns_failover"}
HISTORY = 1024           # interval updates kept per run (4 min at 4 Hz)
MANY_CONNECTIONS = 100  # at or above this a memcached run needs confirming
_ids = itertools.count(1)


@dataclass
class ProbeRequest:
    kind: str
    target: str
    duration: float = 10.0          # seconds: the hard bound
    count: int | None = None        # operations: the other bound
    write: bool = False             # io: write into a private temp file in target dir
    concurrency: int = 1            # io workers / memcached connections
    interval: float = 0.25          # seconds between samples (4 Hz charts)

    def describe(self) -> str:
        bound = f"{self.duration:g} s" + (f" or {self.count} ops" if self.count else "")
        extra = ""
        if self.kind == "io":
            extra = f", {'WRITE' if self.write else 'read'}, {self.concurrency} worker(s)"
        elif self.kind == "memcached":
            extra = f", {'set' if self.write else 'get'} test, {self.concurrency} connection(s)"
        return f"{KIND_TITLES[self.kind]} on {self.target} for at most {bound}{extra}"

    def needs_confirmation(self) -> str | None:
        """Why this run must be confirmed, or None."""
        if self.kind == "io" and self.write:
            return (f"writes a private temporary file inside {self.target} "
                    f"(bound: {self.duration:g} s)")
        if self.kind == "io" and os.path.isdir(self.target):
            return (f"writes a private 64 MiB temporary file inside {self.target} to read from "
                    f"(bound: {self.duration:g} s)")
        if self.kind == "memcached":
            many = " (many connections)" if self.concurrency >= MANY_CONNECTIONS else ""
            return (f"opens {self.concurrency} connections{many} to {self.target} and stores "
                    f"keys in its cache, which may evict real data (bound: {self.duration:g} s)")
        return None


def probe_available(kind: str) -> str | None:
    """None when the probe module is installed, else a plain reason."""
    try:
        spec = importlib.util.find_spec(PROBE_MODULES[kind])
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return f"the {KIND_TITLES[kind]} probe has not landed in this build"
    return None


# Adapters turn a request into an async iterator of ProbeUpdate-like dicts and a summary.
# They are filled in per probe module (inspector.tui.probe_adapters) as the probes land.
Adapter = Callable[[Any], AsyncIterator[dict]]


def _error_text(exc: Exception) -> str:
    """A probe's own errors are written for the operator ("...: no such file"); anything else
    keeps its type, which is most of what an unexpected error says."""
    if type(exc).__module__.startswith("inspector.") and str(exc):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


@dataclass
class ProbeRun:
    request: ProbeRequest
    post: Callable[[Any], None]            # App.post_message (thread-safe)
    adapter: Adapter
    run_id: int = field(default_factory=lambda: next(_ids))
    state: str = "starting"                # running, done, stopped, failed
    started: float = field(default_factory=time.monotonic)
    last: ProbeUpdate | None = None
    summary: Any = None
    error: str | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _task: asyncio.Task | None = None
    _thread: threading.Thread | None = None
    _stop_requested: bool = False
    stop_hook: Callable[[], None] | None = None   # the probe's graceful stop, run on its loop
    # interval updates as received by the UI (appended on the UI thread only), for charts that
    # are (re)drawn later: a screen opened mid-run, the pinned comparison panel
    history: deque = field(default_factory=lambda: deque(maxlen=HISTORY))

    @property
    def title(self) -> str:
        return f"#{self.run_id} {KIND_TITLES[self.request.kind]} {self.request.target}"

    @property
    def active(self) -> bool:
        return self.state in ("starting", "running")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._thread_main, daemon=True,
                                        name=f"probe-{self.run_id}")
        self._thread.start()

    def stop(self) -> None:
        self._stop_requested = True
        loop, task = self._loop, self._task
        if loop is None or task is None or loop.is_closed():
            return
        try:
            if self.stop_hook is not None:
                # graceful: the probe ends its iteration with partial figures; cancel if it
                # has not finished a few seconds later
                loop.call_soon_threadsafe(self.stop_hook)
                loop.call_soon_threadsafe(loop.call_later, 5.0, task.cancel)
            else:
                loop.call_soon_threadsafe(task.cancel)
        except RuntimeError:
            pass  # loop already finished

    def join(self, timeout: float) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def _thread_main(self) -> None:
        loop = None
        if self.request.kind == "memcached":
            try:  # the memcached load generator needs uvloop's lower per-request cost
                import uvloop
                loop = uvloop.new_event_loop()
            except ImportError:
                pass
        if loop is None:  # IO and DNS probes wait on threads and sockets: asyncio is enough,
            loop = asyncio.new_event_loop()   # and uvloop would cost ~1 MB for nothing
        self._loop = loop
        error = None
        try:
            self._task = loop.create_task(self._drive())
            if self._stop_requested:
                self._task.cancel()  # stopped before it started
            loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # shown in the run's panel, never a traceback on screen
            error = _error_text(exc)
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            except Exception:
                pass
            loop.close()
        if error:
            self.state, self.error = "failed", error
        elif self._stop_requested:
            self.state = "stopped"
        else:
            self.state = "done"
        self.post(ProbeFinished(self.run_id, self.summary, self.error))

    async def _drive(self) -> None:
        self.state = "running"
        async for item in self.adapter(self):
            if "summary" in item:
                self.summary = item["summary"]
                continue
            update = ProbeUpdate(run_id=self.run_id, **item)
            self.last = update
            self.post(ProbeProgress(update))


class ProbeManager:
    """All runs of this session; several may be active at once."""

    def __init__(self, post: Callable[[Any], None], adapters: dict[str, Adapter]):
        self.post = post
        self.adapters = adapters
        self.runs: list[ProbeRun] = []

    def start(self, request: ProbeRequest) -> ProbeRun:
        adapter = self.adapters.get(request.kind)
        if adapter is None:
            raise ValueError(probe_available(request.kind) or f"no adapter for {request.kind}")
        run = ProbeRun(request=request, post=self.post, adapter=adapter)
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
