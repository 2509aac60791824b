"""Several load processes behind the Engine interface.

One process already drives its connections from two threads of the C loop where there are two
cores (engine.py, _mcloop.c). When the client has more idle cores (load generator and server on
different hosts), `--workers N` spreads the connections over worker processes (`python -m
inspector.probes.memcached.workers FD`: a fresh interpreter, safe from a threaded TUI and
independent of the caller's __main__), each running its own uvloop Engine with one lane; the
parent receives every latency (as array bytes, ~10 times a second) and the counters, so
percentiles and samples are computed exactly as in one process. It costs more CPU per request
(an interpreter each, the parent re-reads every latency), so on a box that also runs the server
one process is the better default (tests/bench/bench_memcached.py prints ops/s and CPU per op
of --workers 1 and 2 in turn).
"""
from __future__ import annotations

import asyncio
import os
import pickle
import signal
import socket
import subprocess
import sys
from array import array
from collections import Counter
from collections.abc import Callable
from functools import partial
from time import perf_counter_ns
from typing import Any, cast

from inspector.children.parent_death import PARENT_ARG, end_with_parent
from inspector.probes.memcached.engine import Engine
from inspector.probes.memcached.workload import SizeRange, Workload

WORKER_TICK_S = 0.1
SPAWN_TIMEOUT_S = 20.0


def split(count: int, parts: int) -> list[int]:
    base, extra = divmod(count, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


class Channel(asyncio.Protocol):
    """Length-prefixed pickled messages over a socketpair, on the event loop (never blocks)."""

    def __init__(self, on_message: Callable[[Any], None], on_closed: Callable[[], None]):
        self.on_message, self.on_closed = on_message, on_closed
        self.transport: asyncio.WriteTransport | None = None
        self.buf = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)   # uvloop's: not a subclass

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            size = int.from_bytes(self.buf[:4], "big")
            if len(self.buf) < 4 + size:
                break
            msg = pickle.loads(bytes(self.buf[4:4 + size]))
            del self.buf[:4 + size]
            self.on_message(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        self.on_closed()

    def send(self, msg: Any) -> None:
        if self.transport is not None and not self.transport.is_closing():
            payload = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
            self.transport.write(len(payload).to_bytes(4, "big") + payload)


async def open_channel(sock: socket.socket, on_message: Callable[[Any], None],
                       on_closed: Callable[[], None]) -> Channel:
    loop = asyncio.get_running_loop()
    _, channel = await loop.connect_accepted_socket(
        lambda: Channel(on_message, on_closed), sock=sock)
    return channel


# --- worker side -------------------------------------------------------------------------------
def worker_main(fd: int) -> None:
    try:
        import uvloop
        uvloop.run(_serve(fd))
    except ImportError:
        asyncio.run(_serve(fd))
    except KeyboardInterrupt:   # Ctrl-C reaches the whole process group: the parent decides
        pass


def _report(engine: Engine, kind: str) -> tuple:
    s, g = engine.take_latencies()
    counters = {
        "sent_set": engine.sent_set, "sent_get": engine.sent_get,
        "failed_set": engine.failed_set, "failed_get": engine.failed_get,
        "lost_set": engine.lost_set, "lost_get": engine.lost_get,
        "rejected_set": engine.rejected_set, "rejected_get": engine.rejected_get,
        "get_hits": engine.get_hits, "get_misses": engine.get_misses,
        "errors": dict(engine.errors), "first_error": dict(engine.first_error),
        "opened": engine.opened_count(), "open": engine.open_connections(),
        "dead": engine.dead_count(), "in_flight": engine.in_flight(),
    }
    return (kind, s.tobytes(), g.tobytes(), counters)


async def _serve(fd: int) -> None:
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inbox: asyncio.Queue = asyncio.Queue()
    sock = socket.socket(fileno=fd)
    chan = await open_channel(sock, inbox.put_nowait, lambda: inbox.put_nowait(("close",)))
    msg = await inbox.get()
    if msg[0] != "params":
        return
    p = msg[1]
    workload = Workload(p["key_count"], SizeRange(*p["key_size"]), SizeRange(*p["value_size"]))
    engine = Engine(workload, p["set_ratio"], p["limit"], p["rate"], seed=11 + p["index"],
                    lanes=1)
    msg = await inbox.get()
    if msg[0] != "open":
        return
    open_s = await engine.open(p["host"], p["port"], p["count"], p["connect_timeout"],
                               first_index=p["first_index"], total=p["total"])
    chan.send(("opened", open_s) + _report(engine, "tick")[1:])
    msg = await inbox.get()
    if msg[0] == "start":
        if p["duration"]:
            engine.stop_at_ns = perf_counter_ns() + int(p["duration"] * 1e9)
        engine.start()
        getter = asyncio.ensure_future(inbox.get())
        done_wait = asyncio.ensure_future(engine.done.wait())
        while True:
            await asyncio.wait({getter, done_wait}, timeout=WORKER_TICK_S,
                               return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                cmd = getter.result()[0]
                if cmd == "stop_sending":
                    engine.stop_sending()
                elif cmd == "close":
                    engine.close()
                getter = asyncio.ensure_future(inbox.get())
            engine.check_timeouts(p["request_timeout"])
            if engine.done.is_set():
                break
            chan.send(_report(engine, "tick"))
        getter.cancel()
        done_wait.cancel()
    engine.close()
    chan.send(_report(engine, "done"))
    transport = chan.transport
    if transport is None:        # the parent's end went away: nothing to flush
        return
    transport.close()            # flushes what is buffered, then closes
    for _ in range(100):
        if transport.get_write_buffer_size() == 0:
            break
        await asyncio.sleep(0.01)


# --- parent side -------------------------------------------------------------------------------
class EnginePool:
    """The Engine interface MemcachedProbe uses, over `workers` processes."""

    def __init__(self, load: Any, workers: int):   # a probe.MemcachedLoad (probe imports us)
        self.load = load
        self.workers = workers
        self.loop = asyncio.get_running_loop()
        self.done = asyncio.Event()
        self.stopping = False
        self.closing = False
        self.lat_set = array("q")
        self.lat_get = array("q")
        self.ok_set = self.ok_get = 0
        self._procs: list = []
        self._chans: list[Channel] = []
        self._state: list[dict] = []
        self._opened: list[asyncio.Future] = []
        self._finished: list[bool] = []
        self._died: list[str] = []

    # counters summed over the workers' latest reports
    def _sum(self, key: str) -> int:
        return sum(st.get(key, 0) for st in self._state)

    sent_set = property(lambda self: self._sum("sent_set"))
    sent_get = property(lambda self: self._sum("sent_get"))
    failed_set = property(lambda self: self._sum("failed_set"))
    failed_get = property(lambda self: self._sum("failed_get"))
    lost_set = property(lambda self: self._sum("lost_set"))
    lost_get = property(lambda self: self._sum("lost_get"))
    rejected_set = property(lambda self: self._sum("rejected_set"))
    rejected_get = property(lambda self: self._sum("rejected_get"))
    get_hits = property(lambda self: self._sum("get_hits"))
    get_misses = property(lambda self: self._sum("get_misses"))

    @property
    def errors(self) -> Counter:
        total: Counter = Counter()
        for st in self._state:
            total.update(st.get("errors", {}))
        if self._died:
            total["worker_failed"] += len(self._died)
        return total

    @property
    def first_error(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for st in self._state:
            for k, v in st.get("first_error", {}).items():
                out.setdefault(k, v)
        if self._died:
            out.setdefault("worker_failed", self._died[0])
        return out

    def opened_count(self) -> int:
        return self._sum("opened")

    def open_connections(self) -> int:
        return self._sum("open")

    def dead_count(self) -> int:
        return self._sum("dead")

    def in_flight(self) -> int:
        return self._sum("in_flight")

    def check_timeouts(self, timeout_s: float) -> None:
        """Each worker checks its own connections."""

    def take_latencies(self) -> tuple[array, array]:
        s, g = self.lat_set, self.lat_get
        self.lat_set, self.lat_get = array("q"), array("q")
        self.ok_set += len(s)
        self.ok_get += len(g)
        return s, g

    # messages from the workers
    def _on_closed(self, i: int) -> None:
        if not self._finished[i]:
            self._died.append(f"worker {i} exited without a result")
            self._worker_finished(i)
        if not self._opened[i].done():
            self._opened[i].set_result(0.0)

    def _on_message(self, i: int, msg: tuple) -> None:
        kind = msg[0]
        if kind == "opened":
            _, open_s, s_bytes, g_bytes, counters = msg
            self._absorb(i, s_bytes, g_bytes, counters)
            if not self._opened[i].done():
                self._opened[i].set_result(open_s)
            return
        _, s_bytes, g_bytes, counters = msg
        self._absorb(i, s_bytes, g_bytes, counters)
        if kind == "done":
            self._worker_finished(i)

    def _absorb(self, i: int, s_bytes: bytes, g_bytes: bytes, counters: dict) -> None:
        if s_bytes:
            self.lat_set.frombytes(s_bytes)
        if g_bytes:
            self.lat_get.frombytes(g_bytes)
        self._state[i] = counters

    def _worker_finished(self, i: int) -> None:
        if not self._finished[i]:
            self._finished[i] = True
            if all(self._finished):
                self.done.set()

    def _send(self, msg: tuple) -> None:
        for i, chan in enumerate(self._chans):
            if not self._finished[i]:
                chan.send(msg)

    async def open(self, host: str, port: int, count: int, connect_timeout: float) -> float:
        load = self.load
        sizes = split(count, self.workers)
        first = 0
        for i, n in enumerate(sizes):
            parent_sock, child_sock = socket.socketpair()
            params = dict(index=i, host=host, port=port, count=n, first_index=first,
                          total=count, connect_timeout=connect_timeout,
                          request_timeout=load.request_timeout_s,
                          key_count=load.effective_key_count,
                          key_size=(load.key_size.lo, load.key_size.hi),
                          value_size=(load.value_size.lo, load.value_size.hi),
                          set_ratio=load.set_fraction, limit=load.effective_execute_number,
                          rate=load.rate_per_conn, duration=load.duration_s)
            first += n
            child_fd = child_sock.fileno()
            proc = subprocess.Popen([sys.executable, "-m", "inspector.probes.memcached.workers",
                                     str(child_fd), PARENT_ARG, str(os.getpid())],
                                    pass_fds=[child_fd],
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            child_sock.close()
            self._procs.append(proc)
            self._state.append({})
            self._finished.append(False)
            self._opened.append(self.loop.create_future())
            chan = await open_channel(parent_sock, partial(self._on_message, i),
                                      partial(self._on_closed, i))
            self._chans.append(chan)
            chan.send(("params", params))
        self._send(("open",))
        try:
            times = await asyncio.wait_for(asyncio.gather(*self._opened),
                                           SPAWN_TIMEOUT_S + connect_timeout)
        except TimeoutError:
            self._died.append("worker processes did not start in time")
            self.close()
            return 0.0
        return max(times) if times else 0.0

    def start(self) -> None:
        self._send(("start",))
        if all(self._finished):
            self.done.set()

    def stop_sending(self) -> None:
        self.stopping = True
        self._send(("stop_sending",))

    def close(self) -> None:
        """Tell every worker to drop its connections; the final reports still arrive."""
        self.stopping = True
        self.closing = True
        self._send(("close",))

    async def shutdown(self, timeout: float = 3.0) -> None:
        """Wait (bounded) for the final reports, then reap the processes."""
        if not self.done.is_set():
            try:
                await asyncio.wait_for(self.done.wait(), timeout)
            except TimeoutError:
                self._died.append("worker did not report its end in time")
        end = perf_counter_ns() + int(timeout * 1e9)
        for proc in self._procs:
            left = max(0.0, (end - perf_counter_ns()) / 1e9)
            try:
                await asyncio.to_thread(proc.wait, left)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait, 2.0)
        for chan in self._chans:
            if chan.transport is not None:
                chan.transport.abort()
        self.done.set()


if __name__ == "__main__":
    # its own session keeps the terminal's SIGHUP away: it ends with the probe that started
    # it (SIGKILL: no one is left to report to)
    if sys.argv[2:3] == [PARENT_ARG]:
        end_with_parent(int(sys.argv[3]), signal.SIGKILL)
    worker_main(int(sys.argv[1]))
