"""Short bounded probe runs for snapshots, export and the recorder, through the probe layer.

Spec strings (`--probe SPEC`): `io:PATH`, `dns` (or `dns:NAME`), `memcached:HOST[:PORT]`, made
into the same ProbeRequest as the TUI's form (inspector.probes.request). A run gives a typed
ProbeOutcome (inspector.probes.outcome): its summary, intervals and error; `to_json()` is what
snapshots, the history database and the metrics keep. A failed run keeps its error and
whatever partial figures it had; it never raises.

A forked run (run_probe_forked, the one way snapshot, export and record start probe load) never
outlives the command. Its process gets SIGTERM when the command's thread that forked it ends,
however it ends (SIGKILL included: inspector.children.parent_death), and stops the CLI's way:
the probe's own processes (the IO engine, memcached workers) end with it. While it runs, a
stop signal sent to the command (INT, TERM, HUP, QUIT; not one the command ignores) stops the
run first (SIGTERM, partial figures kept), kills it STOP_WAIT_S later if it has not ended,
waits for it to be gone, and only then reaches the command: its own handler (record keeps the
sample, Ctrl-C's KeyboardInterrupt) or, for a signal left at its default action,
StoppedBySignal, which the CLI treats as Ctrl-C (exit 128 + N).
"""
from __future__ import annotations

import os
import select
import signal
import threading
import time
from dataclasses import replace
from typing import Any

from inspector.children.parent_death import end_with_parent
from inspector.probes.outcome import ProbeOutcome, run_probe
from inspector.probes.request import GRACE_S, ProbeRequest
from inspector.roots.bounded import TimedOut, Worker, WorkerFailed, reap

# From a stop signal to SIGKILL of a run that has not ended (a run stops in well under a
# second: the IO engine's STOP_GRACE, memcached's close), then how long its end is waited for.
STOP_WAIT_S = 2.0
KILL_WAIT_S = 1.0
# What stops the command (and so its run); what the run's own process stops on: the command's
# SIGTERM, and a terminal's HUP or QUIT reaching the whole process group (INT too, but the
# forked child ignores it: the command decides).
COMMAND_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
RUN_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def run_probe_forked(request: ProbeRequest, seconds: float) -> ProbeOutcome:
    """run_probe for `seconds` in a child: a probe whose target hangs (an IO probe on a FUSE
    mount that never answers) is a failed run "timed out after N s" (its seconds plus the
    probe layer's GRACE_S, set-up included), and the command goes on with the rest of its
    sample. A stop signal ends the run first, then reaches the command (see the module's
    docstring); once the command is stopping, no run starts."""
    from inspector.probes.driver import stop_requested
    request = replace(request, duration=seconds)
    if (stopped := stop_requested()) is not None:
        return ProbeOutcome(request, error=f"not run: the command was stopped by {_name(stopped)}")
    parent = os.getpid()

    def in_child(_request: Any) -> ProbeOutcome:
        # the run and every process it forks (the IO probe's set-up writing its test file,
        # its engine, the DNS probe's reader) in one group, ended as one; until the probe
        # measures (its driver stops it gracefully then) a stop or the command's death ends
        # the whole group: a set-up left alone would go on writing its 64 MiB
        os.setpgid(0, 0)
        for signum in RUN_STOP_SIGNALS:      # the command's handlers came with the fork
            signal.signal(signum, _end_group)
        end_with_parent(parent, signal.SIGTERM)
        try:
            return run_probe(request, signals=RUN_STOP_SIGNALS)
        finally:                             # the run is over: its answer must get out
            for signum in RUN_STOP_SIGNALS:
                signal.signal(signum, signal.SIG_IGN)

    with _StopOnSignal() as stopper:
        if stopper.signum is not None:
            outcome = ProbeOutcome(request)
        else:
            worker = Worker(in_child)
            stopper.watch(worker.pid)
            try:
                outcome = worker.call(None, seconds + GRACE_S)
            except (TimedOut, WorkerFailed) as exc:
                outcome = ProbeOutcome(request, error=str(exc))
            finally:
                stopper.release()
                worker.close()
                stopper.wait_gone()
    if stopper.signum is not None:
        stopped_by = f"stopped by {_name(stopper.signum)}"
        outcome.error = (f"{stopped_by}: {outcome.error}" if outcome.error
                         else f"{stopped_by} (partial figures)")
        stopper.hand_on()           # the command's own handler: may raise (exit 128 + N)
    return outcome


def _end_group(_signum: int, _frame: object) -> None:
    os.killpg(0, signal.SIGKILL)


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class _StopOnSignal:
    """While a forked run works: the command's stop signals stop it, kill it if it lingers,
    and are handed on to the command's own handlers once it is gone (hand_on)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        self._pidfd: int | None = None
        self._pid: int | None = None
        self._killed = False
        self._kill_at: float | None = None
        self._timer: threading.Timer | None = None
        self._active = True
        # the handler runs in the main thread, maybe while watch() holds the lock there
        self._lock = threading.RLock()

    def __enter__(self) -> _StopOnSignal:
        if threading.current_thread() is not threading.main_thread():
            return self      # handlers are the main thread's; the run still ends with us
        try:
            for signum in COMMAND_STOP_SIGNALS:
                previous = signal.getsignal(signum)
                # one the command ignores stays ignored (`nohup inspector record &`); None:
                # a handler not set from Python, left alone
                if previous is not None and previous is not signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._on_signal)
        except BaseException:        # a handler raised (Ctrl-C) between two of them
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._active = False
            if self._timer is not None:
                self._timer.cancel()
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def watch(self, pid: int) -> None:
        """The run's process, just forked; a signal that came meanwhile stops it now."""
        with self._lock:
            self._pid = pid          # also its process group's id (in_child)
            try:            # a pidfd: signalled safely even once the pid is reaped
                self._pidfd = os.pidfd_open(pid)
            except (OSError, AttributeError):
                pass
            if self.signum is not None and self._kill_at is None:
                self._stop()

    def release(self) -> None:
        """Before the process is reaped: its pid and group id are not ours after that."""
        with self._lock:
            self._pid = None

    def _on_signal(self, signum: int, _frame: object) -> None:
        from inspector.probes.driver import note_stop_signal
        note_stop_signal(signum)
        with self._lock:
            if self.signum is None:
                self.signum = signum
                self._stop()
            else:                    # a second one: no more waiting
                self._kill()

    def _stop(self) -> None:
        if self._pid is None:
            return                   # not forked yet (watch() stops it), or reaped
        self._kill_at = _now() + STOP_WAIT_S
        self._send(signal.SIGTERM)
        self._timer = threading.Timer(STOP_WAIT_S, self._kill)
        self._timer.daemon = True
        self._timer.start()

    def _kill(self) -> None:
        with self._lock:
            if self._active and not self._killed:
                self._killed = True
                if self._pid is not None:    # not reaped before release(): still ours
                    try:                     # the run and what it forked
                        os.killpg(self._pid, signal.SIGKILL)
                    except OSError:          # no group yet: the child was just forked
                        pass
                self._send(signal.SIGKILL)

    def _send(self, signum: int) -> None:
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, signum)
            elif self._pid is not None:
                os.kill(self._pid, signum)
        except OSError:
            pass

    def wait_gone(self) -> None:
        """After a stop signal: wait for the run's process to end (it does once its socket
        is closed), SIGKILL at STOP_WAIT_S, and reap it."""
        if self.signum is None or self._pidfd is None:
            return
        if not _ended(self._pidfd, (self._kill_at or _now()) - _now()):
            self._kill()
            _ended(self._pidfd, KILL_WAIT_S)
        reap()

    def hand_on(self) -> None:
        """The stop signal to the handler it was meant for, now that the run is over; where
        that was the default action (death, which would skip the command's clean-up and
        say nothing), StoppedBySignal: the command stops as for Ctrl-C, exit 128 + N."""
        from inspector.probes.driver import StoppedBySignal
        signum = self.signum
        if signum is None or signum not in self._previous:
            return
        previous = self._previous[signum]
        if callable(previous):
            previous(signum, None)
        else:
            raise StoppedBySignal(signum)


def _now() -> float:
    return time.monotonic()


def _ended(pidfd: int, timeout: float) -> bool:
    """The process is gone (a zombie counts) within `timeout` seconds."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(max(0.0, timeout) * 1000))
