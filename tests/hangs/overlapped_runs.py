"""Runs that mostly wait (a command sitting out a deadline it proves, on a mount that never
answers), started together for a module's tests so that their waits overlap instead of adding
up: each test then takes its own run's result and asserts on it as before.

A module-scoped fixture makes the runs, for the tests selected in this session only (a
`-k` picking one test starts one run); `tests/conftest.py` puts the tests that share it on one
xdist worker. The runs start a little apart (`stagger`) and at most `at_once` together: their
start-ups, the CPU-bound part, then do not pile up on two cores; the bounds the tests assert
are from the moment each command reached the hang, its own start-up aside.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest


def selected_params(request: pytest.FixtureRequest, test_name: str) -> list[dict[str, Any]]:
    """The parameters of each selected item of `test_name` in the requesting module ({} for a
    test with none)."""
    return [item.callspec.params if hasattr(item, "callspec") else {}
            for item in request.session.items
            if getattr(item, "module", None) is request.module
            and getattr(item, "originalname", None) == test_name]


class OverlappedRuns:
    """`start(key, fn, ...)` runs `fn(...)` in the background; `result(key)` waits for it."""

    def __init__(self, at_once: int = 4, stagger: float = 0.3):
        self._pool = ThreadPoolExecutor(at_once)
        self._stagger = stagger
        self._futures: dict[Hashable, Future] = {}
        self._lock = threading.Lock()
        self._next_start = 0.0

    def start(self, key: Hashable, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self._futures[key] = self._pool.submit(self._staggered, fn, args, kwargs)

    def _staggered(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """`fn` no sooner than `stagger` after the run started before it (the runs queued
        behind a full pool would otherwise start together when the first ones end)."""
        with self._lock:
            now = time.monotonic()
            at = max(now, self._next_start)
            self._next_start = at + self._stagger
        time.sleep(at - now)
        return fn(*args, **kwargs)

    def run_alone(self, key: Hashable, fn: Callable[..., Any], *args: Any,
                  **kwargs: Any) -> None:
        """`fn(...)` now, before any other run starts: for a bound that counts the command's
        start-up, which runs starting beside it would slow."""
        assert not self._futures, "run_alone comes before start"
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:        # raised by result(), in the test that asks for it
            future.set_exception(exc)
        self._futures[key] = future

    def result(self, key: Hashable) -> Any:
        assert key in self._futures, f"no run started for {key!r} (not selected?)"
        return self._futures[key].result()

    def wait_all(self) -> None:
        """Until every run started has ended (its subprocesses and their pipes gone)."""
        for future in list(self._futures.values()):
            future.exception()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
