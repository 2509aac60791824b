"""An IO probe's engine run in a forked child, so a request stuck in the kernel cannot keep the
caller from exiting.

A read from a FUSE or NFS mount whose server answered the open and then stopped answering
waits in the kernel, uninterruptibly, until the answer comes; a process with a thread waiting
there cannot finish its exit, so `inspector probe io` printed its figures and never ended (nor
closed the pipe it printed to). Here the engine (io_latency's IoLatencyProbe or IoRamp, built
by the caller and forked with it) runs in a child whose stdin, stdout and stderr are
/dev/null; each IoSample comes back over a socket as it is made, then the result.

Bounds: the child stops its engine HARD_GRACE after the run's own time bound (or a stop from
the caller), cancels it STOP_GRACE later, and the engine then waits at most its JOIN_TIMEOUT
for stuck workers (left out of the figures, named in the result's error). A ramp's bound is
each step's: a step that overruns is stopped alone (its figures kept, the ramp goes on to its
next step), since a slow step on a busy machine is not a stuck one. A child that still has not
answered ANSWER_GRACE after all that is given up: the caller gets the samples it received and
an error saying so. A stuck child stays behind, holding nothing of the caller's, until the
filesystem answers.
"""
from __future__ import annotations

import asyncio
import os
import pickle
import signal
import socket
import struct
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from inspector.children.parent_death import end_with_parent
from inspector.probes.io.latency import (
    JOIN_TIMEOUT,
    IoLatencyProbe,
    IoRamp,
    IoResult,
    IoSample,
    RampResult,
    Recorded,
    summarize_ramp,
)
from inspector.probes.latency import LatencySummary

HARD_GRACE = 0.5      # past the run's own bound before the child stops a run that is stuck
STOP_GRACE = 0.5      # from stop to cancel: the workers' requests in flight may end
ANSWER_GRACE = 1.0    # past all that before the caller gives the child up
WATCH_PERIOD = 0.05   # how often the child looks whether the run in flight is past its bound
_HEADER = struct.Struct("<Q")


class EngineProcess:
    """`samples()` is the engine's IoSamples, run in a child; `result` (after it) its
    IoResult or RampResult. `bound`: the run's own time bound in seconds (None: a count)."""

    def __init__(self, engine: IoLatencyProbe | IoRamp, keep_fd: int, bound: float | None):
        self.engine, self.bound = engine, bound
        # each of a ramp's steps may take its graces (the child bounds them one by one)
        self._steps = len(engine.jobs) if isinstance(engine, IoRamp) else 1
        self.result: IoResult | RampResult | None = None
        self._received: list[IoSample] = []
        self._stop_at: float | None = None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.started = time.monotonic()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            ours.close()
            _child_main(engine, theirs, keep_fd, bound, parent)
        theirs.close()
        self.pid, self._sock = pid, ours
        self._sock.setblocking(False)

    def stop(self) -> None:
        """Ask the child to stop (thread-safe enough: one byte on a socket)."""
        if self._stop_at is None:
            self._stop_at = time.monotonic()
        try:
            self._sock.send(b"s")
        except OSError:
            pass

    def _give_up_at(self) -> float | None:
        after = STOP_GRACE + JOIN_TIMEOUT + ANSWER_GRACE
        ends = []
        if self._stop_at is not None:
            ends.append(self._stop_at + after)
        if self.bound is not None:
            ends.append(self.started + self.bound + ANSWER_GRACE
                        + self._steps * (HARD_GRACE + STOP_GRACE + JOIN_TIMEOUT))
        return min(ends) if ends else None

    async def samples(self) -> AsyncIterator[IoSample]:
        frames: asyncio.Queue = asyncio.Queue()
        reader = asyncio.create_task(self._read(frames))
        try:
            while True:
                give_up = self._give_up_at()
                wait = 0.25 if give_up is None else min(0.25, give_up - time.monotonic())
                try:
                    kind, value = await asyncio.wait_for(frames.get(), max(0.0, wait))
                except TimeoutError:
                    if give_up is not None and time.monotonic() >= give_up:
                        self.result = self._without_answer(
                            f"the probe process did not answer {give_up - self.started:.0f} s "
                            "after the start (a request stuck in a hung filesystem?)")
                        return
                    continue
                if kind == "sample":
                    self._received.append(value)
                    yield value
                elif kind == "result":
                    self.result = value
                    return
                else:           # "end": the child is gone without a result
                    self.result = self._without_answer(value)
                    return
        finally:
            reader.cancel()
            if self.result is None:       # our caller gave up on us (cancelled)
                self.result = self._without_answer("stopped before the probe process "
                                                   "gave its result")
            self.close()

    async def _read(self, frames: asyncio.Queue) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                header = await self._exact(loop, _HEADER.size)
                body = await self._exact(loop, _HEADER.unpack(header)[0])
                await frames.put(pickle.loads(body))
        except (EOFError, OSError) as exc:
            await frames.put(("end", f"the probe process ended without its result ({exc})"))

    async def _exact(self, loop: asyncio.AbstractEventLoop, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = await loop.sock_recv(self._sock, min(left, 1 << 20))
            if not chunk:
                raise EOFError("end of file")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _without_answer(self, error: str) -> IoResult | RampResult:
        """The figures the samples carry, when the child's own result never came."""
        if self.result is None:
            self.kill()
        if isinstance(self.engine, IoRamp):
            return summarize_ramp([], error, True)
        eng = self.engine
        requests = sum(s.requests for s in self._received)
        return IoResult(path=eng.target.path, description=eng.target.describe(),
                        mode=eng.cfg.mode, request_size=eng.cfg.request_size,
                        jobs=eng.cfg.jobs, direct=eng.target.direct, requests=requests,
                        warmups=0, wall_ns=int((time.monotonic() - self.started) * 1e9),
                        reads=0, writes=0, latency=LatencySummary(0, None, None, None, None),
                        error=error, interrupted=True, stuck_workers=eng.cfg.jobs,
                        samples=list(self._received))

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def close(self) -> None:
        """Close our end and reap the child if it has ended (it exits right after sending
        its result); one stuck in the kernel is left, reparented when we exit."""
        self._sock.close()
        give_up = time.monotonic() + 0.5
        while True:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0] or time.monotonic() > give_up:
                    return
            except ChildProcessError:
                return
            time.sleep(0.01)


# ------------------------------------------------------------------------------ the child
def _child_main(engine: Any, sock: socket.socket, keep_fd: int, bound: float | None,
                parent: int) -> None:
    status = 0
    try:
        # a parent that ends without stopping us (SIGKILL) takes the load with it: the socket's
        # EOF would stop us too, but only once our event loop runs again
        end_with_parent(parent, signal.SIGKILL)
        # the caller stops us over the socket (its Ctrl-C, SIGTERM, SIGHUP: partial figures
        # kept); a signal meant for it must not kill us before our result is sent
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        try:
            signal.set_wakeup_fd(-1)         # the caller's event loop's, closed below
        except ValueError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        keep = sorted((sock.fileno(), keep_fd))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, os.sysconf("SC_OPEN_MAX"))
        sock.setblocking(True)
        asyncio.run(_drive(engine, sock, bound))
    except BaseException:
        status = 1
    finally:
        os._exit(status)


async def _drive(engine: Any, sock: socket.socket, bound: float | None) -> None:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    cancel: list[asyncio.TimerHandle] = []

    def stop() -> None:
        engine.stop()
        if not cancel:
            cancel.append(loop.call_later(STOP_GRACE, task.cancel))

    def on_message() -> None:
        try:
            sock.recv(64)       # a stop, or the caller gone (EOF): stop either way
        except OSError:
            pass
        loop.remove_reader(sock.fileno())
        stop()
    loop.add_reader(sock.fileno(), on_message)
    watch = None if bound is None else _BoundWatch(loop, engine, bound, task)
    failure = None
    try:
        async for sample in engine:
            _send(sock, ("sample", sample))
    except asyncio.CancelledError:
        pass
    except Exception as exc:      # an engine bug: said, not a silent end
        failure = f"the probe failed: {type(exc).__name__}: {exc}"
    finally:
        for handle in cancel:
            handle.cancel()
        if watch is not None:
            watch.close()
    result = engine.result
    if failure or result is None:
        _send(sock, ("end", failure or "the probe ended without a result"))
        return
    if watch is not None and watch.cancelled and not result.error:
        # cut by its bound, not by anyone's stop: said as such, not as an interruption
        result = replace(result, error=f"the run did not end {HARD_GRACE + STOP_GRACE:g} s "
                                       "after its time bound (stopped there)")
    _send(sock, ("result", transportable(result)))


class _BoundWatch:
    """Stops the run in flight HARD_GRACE past its own bound (a ramp: the step in flight,
    past its step time) and cancels the engine if that run has not ended STOP_GRACE later."""

    def __init__(self, loop: asyncio.AbstractEventLoop, engine: Any, bound: float,
                 task: asyncio.Task):
        self.loop, self.engine, self.bound, self.task = loop, engine, bound, task
        self.cancelled = False
        self._started = time.monotonic()
        self._step: Any = None
        self._step_started = self._started
        self._stopped: Any = None               # the last run stopped (they come one by one)
        self._cancels: list[asyncio.TimerHandle] = []     # one per run stopped
        self._next = loop.call_soon(self._check)

    def _in_flight(self) -> tuple[Any, float] | None:
        """The run the bound applies to, and when it is due."""
        if not isinstance(self.engine, IoRamp):
            return self.engine, self._started + self.bound + HARD_GRACE
        step = self.engine.current
        if step is None:
            return None
        if step is not self._step:
            self._step, self._step_started = step, time.monotonic()
        return step, self._step_started + self.engine.step_seconds + HARD_GRACE

    def _check(self) -> None:
        due = self._in_flight()
        if due is not None:
            run, at = due
            if run is not self._stopped and time.monotonic() >= at:
                self._stopped = run
                run.stop()
                self._cancels.append(self.loop.call_later(STOP_GRACE, self._cancel, run))
        self._next = self.loop.call_later(WATCH_PERIOD, self._check)

    def _cancel(self, run: Any) -> None:
        if run.result is None and not self.task.done():
            self.cancelled = True
            self.task.cancel()

    def close(self) -> None:
        for handle in (self._next, *self._cancels):
            handle.cancel()


def _send(sock: socket.socket, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data, socket.MSG_NOSIGNAL)


def transportable(result: IoResult | RampResult | None) -> IoResult | RampResult | None:
    """The result with its recorders reduced to what is read of them (Recorded)."""
    if isinstance(result, IoResult):
        return _transportable_run(result)
    if isinstance(result, RampResult):     # the knee, max and min are among its steps
        return summarize_ramp([replace(s, result=_transportable_run(s.result))
                               for s in result.steps], result.error, result.interrupted)
    return result


def _transportable_run(result: IoResult) -> IoResult:
    recorder = result.recorder
    return replace(result, recorder=None if recorder is None else Recorded(
        recorder.total, recorder.count, recorder.buckets()),
        workers=[replace(w, recorder=None) for w in result.workers])
