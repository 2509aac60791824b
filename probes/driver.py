"""Running a probe: the event loop, the stop signals and the hard deadline, in one place.

    driver = ProbeDriver(probe, on_interval=print_it, signals=STOP_SIGNALS).run()
    driver.signum          # the signal that stopped it (exit status 128 + signum), or None
    probe.result.summary()

The CLI, snapshot/record and the TUI's runs all go through ProbeDriver.run(), which blocks the
calling thread on a private event loop: uvloop when the probe asks for it (the memcached load
generator needs its lower per-request cost), plain asyncio otherwise (the IO and DNS probes
wait on threads and sockets, and uvloop would add RSS for nothing: tests/bench/bench_costs.py
prints how much).

Stopping is always graceful first: probe.stop() ends the run with its partial figures kept;
a probe still running GRACE_S (probes.request) later is cancelled. SIGINT, SIGTERM, SIGHUP and SIGQUIT stop
it that way where the caller asks for signals (the CLI: `timeout 5 inspector probe ...` still
prints its figures); the probe's `deadline` (seconds) stops it that way too. A stop signal is
also remembered for the process (stop_requested): a command stopping starts no new probe run.
"""
from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from inspector.probes.base import Interval, Probe
from inspector.probes.request import GRACE_S

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

_stop_signal: int | None = None      # the first stop signal this process got


class StoppedBySignal(KeyboardInterrupt):
    """A stop signal whose action was the default (TERM, HUP, QUIT), raised where Ctrl-C's
    KeyboardInterrupt would be once the probe runs it stopped are over
    (inspector.probes.forked_runs): the command stops as it does for Ctrl-C, and the CLI exits
    128 + signum."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def note_stop_signal(signum: int) -> None:
    """This process was asked to stop by `signum`: no probe run starts after this."""
    global _stop_signal
    if _stop_signal is None:
        _stop_signal = signum


def stop_requested() -> int | None:
    """The stop signal this process got (any front end's: stop_signals, a ProbeDriver's, the
    forked runs' in inspector.probes.forked_runs), or None."""
    return _stop_signal


def loop_factory(probe: Probe) -> Callable[[], asyncio.AbstractEventLoop] | None:
    if probe.uvloop:
        try:
            import uvloop
            return uvloop.new_event_loop
        except ImportError:     # uvloop is a Linux-only dependency
            pass
    return None


def add_signal_handlers(loop: asyncio.AbstractEventLoop, callback: Callable[[int], None],
                        signals: Iterable[int]) -> dict[int, Any]:
    """loop.add_signal_handler for each signal that can have one here (the main thread of a
    Unix process); returns those installed with the handler each replaced, for
    remove_signal_handlers."""
    installed = {}
    for signum in signals:
        previous = signal.getsignal(signum)
        try:
            loop.add_signal_handler(signum, callback, signum)
            installed[signum] = previous
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    return installed


def remove_signal_handlers(loop: asyncio.AbstractEventLoop, installed: dict[int, Any]) -> None:
    """The handlers as they were (asyncio would leave SIG_DFL: the CLI's own would be lost)."""
    for signum, previous in installed.items():
        loop.remove_signal_handler(signum)
        if previous is not None:
            signal.signal(signum, previous)


@contextmanager
def stop_signals(callback: Callable[[int], None],
                 signals: Iterable[int] = STOP_SIGNALS) -> Iterator[None]:
    """The same stop signals for a program without an event loop (the recorder). A signal
    someone chose to ignore stays ignored: `nohup inspector record &` must outlive the SSH
    session that started it (and `cmd &` in sh ignores SIGINT)."""
    def on_signal(signum: int, _frame: object) -> None:
        note_stop_signal(signum)
        callback(signum)

    previous = {}
    for signum in signals:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, on_signal)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _raise_stopped(signum: int, _frame: object) -> None:
    note_stop_signal(signum)
    raise StoppedBySignal(signum)


@contextmanager
def raise_on_signals(signals: Iterable[int] = STOP_SIGNALS) -> Iterator[None]:
    """While a probe does what cannot stop gracefully (its set-up: a test file written, a
    resolver read, in forked children): a stop signal raises StoppedBySignal there, as Ctrl-C
    raises KeyboardInterrupt, so the children are killed on the way out (inspector.roots.bounded)
    instead of going on after a process that died of the signal. An ignored signal stays
    ignored; outside the main thread, nothing changes."""
    previous = {}
    try:
        for signum in signals:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, _raise_stopped)
    except ValueError:          # not the main thread
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class ProbeDriver:
    """Drives one probe to its end; `stop()` may be called from any thread."""

    def __init__(self, probe: Probe, on_interval: Callable[[Interval], None] | None = None, *,
                 signals: Iterable[int] = (), grace: float = GRACE_S,
                 on_prepared: Callable[[], None] | None = None):
        self.probe = probe
        self.on_interval = on_interval
        self.signals = tuple(signals)
        self.grace = grace
        self.on_prepared = on_prepared      # told once the target is open, before measuring
        self.signum: int | None = None      # the stop signal that ended the run
        self.expired = False                # the hard deadline ended it
        self._stop_requested = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._cancel_timer: asyncio.TimerHandle | None = None

    @property
    def stopped(self) -> bool:
        return self._stop_requested

    def run(self) -> ProbeDriver:
        """prepare() (ProbeError on a bad target), every interval to on_interval, close().
        The stop signals stop the measuring gracefully; before and after it, they raise
        (raise_on_signals) and end the run the same way."""
        try:
            with raise_on_signals(self.signals):
                self.probe.prepare()
                if self.on_prepared is not None:
                    self.on_prepared()
                with asyncio.Runner(loop_factory=loop_factory(self.probe)) as runner:
                    runner.run(self._drive())
        except KeyboardInterrupt as exc:   # Ctrl-C (or StoppedBySignal) before the handlers
            # were in place, or a second one
            signum: int = getattr(exc, "signum", signal.SIGINT)
            self.signum = self.signum or signum
            note_stop_signal(signum)
            self._stop_requested = True
            self.probe.stop()
        finally:
            self.probe.close()
        return self

    def stop(self) -> None:
        """End the run: the probe stops with its partial figures, or is cancelled `grace`
        seconds later. Thread-safe; before the run has started it never starts measuring."""
        self._stop_requested = True
        loop = self._loop
        if loop is None or loop.is_closed():
            self.probe.stop()
            return
        try:
            loop.call_soon_threadsafe(self._stop_now)
        except RuntimeError:        # the loop has just finished
            pass

    async def _drive(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop, self._task = loop, asyncio.current_task()
        installed = add_signal_handlers(loop, self._on_signal, self.signals)
        deadline = None
        if self.probe.deadline is not None:
            deadline = loop.call_later(self.probe.deadline, self._expire)
        if self._stop_requested:
            self._stop_now()
        try:
            async for interval in self.probe.intervals():
                if self.on_interval is not None:
                    self.on_interval(interval)
        except asyncio.CancelledError:
            if self._cancel_timer is None:      # not ours: the caller's cancellation
                raise
        finally:
            for timer in (deadline, self._cancel_timer):
                if timer is not None:
                    timer.cancel()
            remove_signal_handlers(loop, installed)

    def _on_signal(self, signum: int) -> None:
        self.signum = self.signum or signum
        note_stop_signal(signum)
        self._stop_now()

    def _expire(self) -> None:
        self.expired = True
        self._stop_now()

    def _stop_now(self) -> None:
        self._stop_requested = True
        self.probe.stop()
        if self._cancel_timer is None and self._task is not None and self._loop is not None:
            self._cancel_timer = self._loop.call_later(self.grace, self._task.cancel)
