"""A child process doing the TUI's host reads, so the TUI can always exit.

A thread stuck in a read the kernel never answers (a FUSE mount whose server hangs, a hard NFS
mount) keeps its whole process from finishing its exit, and the interpreter joins the event
loop's worker threads before it even tries (see inspector.roots.bounded). The TUI's discovery and
live sampling therefore read the host in children (inspector.roots.bounded.Worker), each kept for
the session; the UI process only waits on a socket, always with a deadline, from daemon
threads. (A one-off read, a form's check or a history query: inspector.probes.bounded_ask.)
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from inspector.roots.bounded import Worker, WorkerFailed


class ForkedService:
    """`call(request, timeout)` answered by `serve(request)` in a child process, where
    `serve = make_serve()` is built here and used only there.

    The child is forked at construction: before the UI starts its threads, forking is safe
    (a lock another thread holds would stay held in the child). A call that times out leaves
    the child behind (Worker.abandon) and the next call forks a new one. `close()` never
    closes a socket another thread is waiting on: a call in flight closes it when it returns."""

    def __init__(self, make_serve: Callable[[], Callable[[Any], Any]],
                 worker: Worker | None = None):
        """`worker`: a child already serving `make_serve()` (one shared with other services,
        inspector.tui.readers); by default one is forked."""
        self._make_serve = make_serve
        self._lock = threading.Lock()
        self._busy = False
        self._closed = False
        self._worker: Worker | None = worker if worker is not None else Worker(make_serve())

    def call(self, request: Any, timeout: float) -> Any:
        """The child's answer; inspector.roots.bounded.TimedOut or WorkerFailed otherwise."""
        with self._lock:
            if self._closed:
                raise WorkerFailed("closed")
            if self._worker is None or not self._worker.alive:
                if self._worker is not None:
                    self._worker.close()     # its child was ended by another of its workers
                self._worker = Worker(self._make_serve())
            worker, self._busy = self._worker, True
        try:
            return worker.call(request, timeout)
        finally:
            with self._lock:
                self._busy = False
                if self._closed:
                    worker.close()

    def close(self) -> None:
        """End the child (it exits once its reads return; one stuck in the kernel stays
        behind, holding nothing of ours)."""
        with self._lock:
            self._closed = True
            if not self._busy and self._worker is not None:
                self._worker.close()
