"""The memcached load engine: N asyncio.Protocol connections, each a closed loop, one request
in flight, speaking the text protocol.

The connections are opened here (asyncio transports); the requests and replies of a closed-loop
load then go through the C loop of `_mcloop.c` when it is built (the connections' sockets
driven from one epoll set in bursts with the GIL released, the event loop running between
bursts; see there why). What it does not expect (error replies, closed connections) comes back
as events and is handled by the same LoadConnection code as in the Python path. The Python path
serves a rate-limited load, a workload too big to pre-encode, a build without the C loop, and
INSPECTOR_MEMCACHED_LOOP=python (the bench compares both): a callback chain with no coroutine in
it, where `data_received` recognises the common replies by comparing bytes (no regex), appends
the latency in nanoseconds to an `array('q')`, and queues the next pre-encoded request; the
queued requests are written together once the loop iteration's replies are handled
(`Engine.flush_writes`). Statistics are built from those arrays outside this path (see
`take_latencies`). asyncio streams would put a coroutine resumption and a buffer copy on every
request.
"""
from __future__ import annotations

import asyncio
import errno
import os
import random
import socket
from array import array
from collections import Counter
from collections.abc import Callable
from time import perf_counter_ns
from typing import cast

from inspector.probes.memcached.workload import Workload

try:                                   # the per-request loop in C (probes/memcached/_mcloop.c)
    from inspector.probes.memcached import _mcloop
except ImportError:                    # no compiler at install: the Python path
    _mcloop = None  # type: ignore[assignment]

IDLE, SET, GET = 0, 1, 2
UNLIMITED = 1 << 62
QUEUED = 1 << 62          # sent_at of a request waiting in the outbox: never "timed out"
CLOCK_EVERY = 256
# The C loop hands the event loop back this often: samples, timers, a stop signal and a
# worker's channel wait at most this long, and a burst costs the loop one turn.
BURST_NS = 2_000_000
LOOP_ENV = "INSPECTOR_MEMCACHED_LOOP"     # "python": the Python path even with the C loop built

# error kinds, stable ids for JSON and the TUI; labels for people
ERROR_LABELS = {
    "resolve": "cannot resolve host",
    "connect_refused": "connection refused",
    "connect_timeout": "connect timed out",
    "connect_error": "connect failed",
    "client_fd_limit": "client out of file descriptors (RLIMIT_NOFILE)",
    "too_many_connections": "server: ERROR Too many open connections",
    "closed_by_server": "connection closed by server",
    "timeout": "request timed out (no reply)",
    "client_error": "CLIENT_ERROR reply",
    "server_error": "SERVER_ERROR reply",
    "error": "ERROR reply",
    "not_stored": "NOT_STORED reply",
    "protocol": "unexpected reply",
    "worker_failed": "load worker process failed",
}
TOO_MANY = b"ERROR Too many open connections"



def _unconnected(data: bytes) -> None:
    """A connection's write before it is made (nothing is sent before connection_made)."""
    raise ConnectionError("memcached connection not made yet")

class LoadConnection(asyncio.Protocol):
    """One connection of the closed loop. Owned by an Engine; never raises into the loop."""

    __slots__ = ("engine", "transport", "buf", "op", "sent_at", "remaining", "cursor", "next_request",
                 "finished", "dead", "due", "timer", "write", "add_set", "add_get",
                 "set_requests", "get_requests", "key_count", "set_ratio", "random", "native")

    def __init__(self, engine: Engine, first_key: int, limit: int):
        self.engine = engine
        # the per-request path reads these from the connection itself (fewer lookups)
        self.add_set = engine.lat_set.append
        self.add_get = engine.lat_get.append
        self.set_requests = engine.set_requests
        self.get_requests = engine.get_requests
        self.key_count = engine.key_count
        self.set_ratio = engine.set_ratio
        self.random = engine.random
        self.write: Callable[[bytes], object] = _unconnected    # the transport's, once connected
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.op = IDLE
        self.sent_at = 0
        self.next_request = b""
        self.remaining = limit
        self.cursor = first_key
        self.finished = False     # no more requests from this connection
        self.dead = False         # the connection failed (already counted)
        self.due = 0.0            # next send time when rate-limited (loop.time())
        self.timer: asyncio.TimerHandle | None = None
        self.native = -1          # its index in the engine's C loop, once it drives it

    # --- asyncio callbacks -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.transport = transport
        self.write = transport.write
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def data_received(self, data: bytes) -> None:
        if self.buf:
            data = self.buf + data
            self.buf = b""
        op = self.op
        if op == SET:
            if data == b"STORED\r\n":
                self.add_set(perf_counter_ns() - self.sent_at)
                self.send_next()
                return
        elif op == GET:
            if data[:6] == b"VALUE ":
                eol = data.find(b"\r\n")
                if eol > 0:
                    try:
                        need = eol + 9 + int(data[data.rfind(b" ", 0, eol) + 1:eol])
                    except ValueError:
                        need = -1
                    if len(data) == need and data[-5:] == b"END\r\n":
                        self.add_get(perf_counter_ns() - self.sent_at)
                        self.engine.get_hits += 1
                        self.send_next()
                        return
                    if len(data) < need:
                        self.buf = data
                        return
            elif data == b"END\r\n":
                self.add_get(perf_counter_ns() - self.sent_at)
                self.engine.get_misses += 1
                self.send_next()
                return
        self._unusual_reply(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        eng = self.engine
        if not (self.dead or eng.closing or (self.finished and self.op == IDLE)):
            detail = str(exc) if exc else "connection closed by server (EOF)"
            eng.count_error("closed_by_server", detail)
            self._lose_request()
        self.dead = True
        self.transport = None
        self._finish()

    # --- sending -----------------------------------------------------------------------------
    def send_next(self) -> None:
        eng = self.engine
        eng.countdown -= 1
        if eng.countdown <= 0:
            eng.check_clock()
        if eng.stopping or self.remaining <= 0 or self.dead:
            self.op = IDLE
            self._finish()
            return
        if eng.interval_s:
            loop_now = eng.loop.time()
            self.due = max(self.due + eng.interval_s, loop_now - eng.interval_s)
            if self.due > loop_now:
                self.op = IDLE
                self.timer = eng.loop.call_at(self.due, self._send_scheduled)
                return
        # the body of _send(), inline: one Python call less per request; the write itself is
        # queued for Engine.flush_writes (see there)
        self.remaining -= 1
        i = self.cursor
        self.cursor = i + 1 if i + 1 < self.key_count else 0
        ratio = self.set_ratio
        if ratio >= 1.0 or (ratio > 0.0 and self.random() < ratio):
            self.op = SET
            eng.sent_set += 1
            self.next_request = self.set_requests[i]
        else:
            self.op = GET
            eng.sent_get += 1
            self.next_request = self.get_requests[i]
        self.sent_at = QUEUED
        box = eng.outbox
        if not box:
            eng.call_soon(eng.flush_writes)
        box.append(self)

    def _send_scheduled(self) -> None:
        self.timer = None
        eng = self.engine
        if eng.stopping or self.dead:
            self._finish()
            return
        self._send()

    def _send(self) -> None:
        eng = self.engine
        self.remaining -= 1
        i = self.cursor
        self.cursor = i + 1 if i + 1 < self.key_count else 0
        ratio = self.set_ratio
        if ratio >= 1.0 or (ratio > 0.0 and self.random() < ratio):
            self.op = SET
            eng.sent_set += 1
            self.sent_at = perf_counter_ns()
            self.write(self.set_requests[i])
        else:
            self.op = GET
            eng.sent_get += 1
            self.sent_at = perf_counter_ns()
            self.write(self.get_requests[i])

    # --- the uncommon paths --------------------------------------------------------------------
    def _unusual_reply(self, data: bytes) -> None:
        """Error lines, split replies, NOT_STORED, replies while idle (a rejection on accept)."""
        eng = self.engine
        eol = data.find(b"\r\n")
        if eol < 0:
            if len(data) > 1 << 20:
                self._fail("protocol", f"no line end in {len(data)} bytes")
            else:
                self.buf = data
            return
        line = data[:eol]
        if line.startswith(TOO_MANY):
            self._fail("too_many_connections", line.decode("latin-1"))
            return
        if self.op == IDLE:
            self._fail("protocol", f"reply while idle: {line[:80]!r}")
            return
        if line.startswith(b"VALUE "):   # a get reply whose length field did not add up
            self._fail("protocol", f"bad VALUE reply: {line[:80]!r}")
            return
        kind = None
        if line.startswith(b"SERVER_ERROR"):
            kind = "server_error"
        elif line.startswith(b"CLIENT_ERROR"):
            kind = "client_error"
        elif line.startswith(b"ERROR"):
            kind = "error"
        elif line == b"NOT_STORED" or line == b"EXISTS" or line == b"NOT_FOUND":
            kind = "not_stored"
        if kind is None or len(data) != eol + 2:
            self._fail("protocol", f"unexpected reply: {data[:80]!r}")
            return
        eng.count_error(kind, line.decode("latin-1", "replace")[:200])
        rejected = kind in ("server_error", "client_error")   # memcached does not count these
        if self.op == SET:
            eng.failed_set += 1
            eng.rejected_set += rejected
        else:
            eng.failed_get += 1
            eng.rejected_get += rejected
        if self.native >= 0:
            self.op = IDLE
            eng.native_resume(self)
        else:
            self.send_next()

    def native_lost(self, detail: str) -> None:
        """connection_lost for a connection the C loop drives (its transport reads nothing)."""
        if not (self.dead or self.engine.closing):
            self.engine.count_error("closed_by_server", detail)
            self._lose_request()
        self.dead = True
        self.op = IDLE
        self.abort()
        self._finish()

    def _fail(self, kind: str, detail: str) -> None:
        """Count one error and drop this connection (its stream can no longer be trusted)."""
        if not self.dead:
            self.dead = True
            self.engine.count_error(kind, detail)
            self._lose_request()
        self.op = IDLE
        self.abort()
        self._finish()

    def _lose_request(self) -> None:
        """The request in flight (if any) ends without a usable reply: a per-op error."""
        eng = self.engine
        if self.op == SET:
            eng.failed_set += 1
            eng.lost_set += 1
        elif self.op == GET:
            eng.failed_get += 1
            eng.lost_get += 1
        self.op = IDLE

    def _finish(self) -> None:
        if not self.finished:
            self.finished = True
            self.engine.connection_finished()

    def abort(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.native >= 0:      # out of the C loop's epoll set before its socket closes
            self.engine.native_drop(self)
        if self.transport is not None:
            self.transport.abort()


def classify_connect_error(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connect_refused"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "connect_timeout"
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
        return "client_fd_limit"
    return "connect_error"


class _JoinedSetRequests:
    """For workloads too big to pre-encode: builds each set request when it is sent."""

    def __init__(self, workload: Workload):
        self.build = workload.set_request

    def __getitem__(self, i: int) -> bytes:
        return self.build(i)


class Engine:
    """Connections plus the counters they share. One engine per load phase (or ramp step)."""

    def __init__(self, workload: Workload, set_ratio: float, per_conn_limit: int | None = None,
                 rate_per_conn: float | None = None, seed: int = 11, lanes: int | None = None):
        self.loop = asyncio.get_running_loop()
        self.workload = workload
        self.key_count = workload.key_count
        self.set_requests = (workload.set_requests if workload.set_requests is not None
                             else _JoinedSetRequests(workload))
        self.get_requests = workload.get_requests
        self.set_ratio = set_ratio
        self.limit = per_conn_limit if per_conn_limit else UNLIMITED
        self.interval_s = 1.0 / rate_per_conn if rate_per_conn else 0.0
        self.seed = seed
        # threads of the C loop: two where there are two cores (see _mcloop.c); a worker
        # process of an EnginePool is one of several already
        self.lanes = lanes if lanes else (2 if (os.cpu_count() or 1) > 1 else 1)
        self.random = random.Random(seed).random
        self.lat_set = array("q")
        self.lat_get = array("q")
        self.sent_set = self.sent_get = 0
        # per-op errors: failed = every request that ended in an error; of those, lost = no
        # reply (timeout, reset, garbage) and rejected = SERVER_ERROR/CLIENT_ERROR replies
        self.failed_set = self.failed_get = 0
        self.lost_set = self.lost_get = 0
        self.rejected_set = self.rejected_get = 0
        self.ok_set = self.ok_get = 0          # updated by take_latencies
        self.get_hits = self.get_misses = 0
        self.errors: Counter[str] = Counter()
        self.first_error: dict[str, str] = {}
        self.conns: list[LoadConnection] = []
        self.active = 0
        self.started = False
        # With thousands of busy connections libuv runs up to 48 x 1024 callbacks before it
        # looks at timers, which can take a second, so the end of a timed run is checked from
        # the hot path every CLOCK_EVERY replies as well.
        self.stop_at_ns = 0
        self.countdown = CLOCK_EVERY
        self.stopping = False
        self.closing = False
        self._dead_at_close = 0
        self.done = asyncio.Event()
        # Writes of the next requests are queued while replies are handled, and written
        # together once this loop iteration's I/O callbacks are done. Each write wakes a server
        # thread that can preempt this (single) thread on the spot; writing after the reads
        # lets this thread handle every reply the iteration brought before a server thread
        # wakes, so fewer of them preempt it. The latency clock starts at the write.
        self.outbox: list[LoadConnection] = []
        self.call_soon = self.loop.call_soon
        # the C loop, once start() hands it the connections; its connections by index, and
        # the counters from before it (added to its own)
        self.native: _mcloop.Loop | None = None
        self._native_conns: list[LoadConnection] = []
        self._native_base = (0, 0, 0, 0)

    def flush_writes(self) -> None:
        box = self.outbox
        self.outbox = []
        if self.closing:
            return
        for conn in box:
            if conn.transport is not None and not conn.dead and conn.op != IDLE:
                conn.sent_at = perf_counter_ns()
                conn.write(conn.next_request)

    def check_clock(self) -> None:
        self.countdown = CLOCK_EVERY
        if self.stop_at_ns and not self.stopping and perf_counter_ns() >= self.stop_at_ns:
            self.stop_sending()

    def count_error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        self.first_error.setdefault(kind, detail)

    def connection_finished(self) -> None:
        if self.native is not None:
            self.active = self.native.counters()[4]
        else:
            self.active -= 1
        if self.started and self.active <= 0:
            self.done.set()

    async def open(self, host: str, port: int, count: int, connect_timeout: float,
                   parallel: int = 256, first_index: int = 0, total: int | None = None) -> float:
        """Open `count` connections (at most `parallel` handshakes at once); seconds taken.
        Connection i starts at key (first_index + i) * key_count / total, spreading the keys
        over all connections (of every worker process)."""
        gate = asyncio.Semaphore(parallel)
        start = perf_counter_ns()
        stride = max(1, self.key_count // max(total or count, 1))

        async def one(index: int) -> None:
            conn = LoadConnection(self, ((first_index + index) * stride) % self.key_count, self.limit)
            async with gate:
                if self.closing:
                    return
                try:
                    await asyncio.wait_for(
                        self.loop.create_connection(lambda: conn, host, port), connect_timeout)
                except (TimeoutError, OSError) as exc:
                    kind = classify_connect_error(exc)
                    self.count_error(kind, f"{host}:{port}: {exc or 'timed out'}")
                    return
            if self.closing:
                conn.abort()
                return
            self.conns.append(conn)
            self.active += 1

        await asyncio.gather(*(one(i) for i in range(count)))
        return (perf_counter_ns() - start) / 1e9

    def start(self) -> None:
        """Send the first request on every open connection that was not already rejected."""
        self.started = True
        if self._start_native():
            return
        now = self.loop.time()
        for conn in self.conns:
            if not conn.finished and not conn.dead:
                conn.due = now
                conn._send()
        if self.active <= 0:
            self.done.set()

    # --- the C loop ------------------------------------------------------------------------
    def _start_native(self) -> bool:
        """Hand the open connections to the C loop; False where the Python path serves."""
        if (_mcloop is None or os.environ.get(LOOP_ENV) == "python" or self.interval_s
                or not isinstance(self.set_requests, list)):
            return False
        conns = [c for c in self.conns if not c.finished and not c.dead]
        fds = []
        for conn in conns:
            sock = conn.transport.get_extra_info("socket") if conn.transport else None
            if sock is None:
                return False
            fds.append(sock.fileno())
        if not conns:
            return False
        for conn in conns:
            assert conn.transport is not None       # checked above
            conn.transport.pause_reading()          # its replies are the C loop's to read
        self.native = _mcloop.Loop(fds, [c.cursor for c in conns], [c.remaining for c in conns],
                                   self.set_requests, self.get_requests, self.set_ratio,
                                   self.seed, self.lanes)
        for index, conn in enumerate(conns):
            conn.native = index
        self._native_conns = conns
        self._native_base = (self.sent_set, self.sent_get, self.get_hits, self.get_misses)
        self.native.start()
        self._native_sync()
        if not self.done.is_set():
            self.call_soon(self._pump)
        return True

    def _pump(self) -> None:
        """One burst of the C loop, what it hands back, and the next burst on the next turn."""
        native = self.native
        if native is None or self.closing:
            return
        try:
            if native.burst(perf_counter_ns() + BURST_NS, self.stop_at_ns):
                self._native_events(native.events())
        except (OSError, MemoryError) as exc:    # the loop cannot go on: the run ends with it
            self.count_error("protocol", f"load loop failed: {exc}")
            self.close()
            return
        self._native_sync()
        if not self.done.is_set() and not self.closing:
            self.call_soon(self._pump)

    def _native_events(self, events: list[tuple[int, int, int, bytes | int]]) -> None:
        for index, kind, op, payload in events:
            conn = self._native_conns[index]
            conn.op = op
            if isinstance(payload, bytes):       # _mcloop.EV_REPLY: a whole line at least
                conn.buf = b""
                conn._unusual_reply(payload)
            elif kind == _mcloop.EV_EOF:
                conn.native_lost("connection closed by server (EOF)")
            else:
                conn.native_lost(f"[Errno {payload}] {os.strerror(payload)}")

    def _native_sync(self) -> None:
        """The C loop's counters into the engine's; done once it has finished them all."""
        assert self.native is not None
        sent_set, sent_get, hits, misses, active, stopping = self.native.counters()
        base = self._native_base
        self.sent_set, self.sent_get = base[0] + sent_set, base[1] + sent_get
        self.get_hits, self.get_misses = base[2] + hits, base[3] + misses
        if stopping:
            self.stopping = True
        self.active = active
        if active <= 0:
            for conn in self._native_conns:
                conn.finished = True
            self.done.set()

    def native_resume(self, conn: LoadConnection) -> None:
        """A connection whose error reply was counted goes on in the C loop."""
        assert self.native is not None
        self.native.resume(conn.native)

    def native_drop(self, conn: LoadConnection) -> None:
        if self.native is not None:
            self.native.drop(conn.native)

    def check_timeouts(self, timeout_s: float) -> None:
        if self.native is not None:
            native = self.native
            for index in native.overdue(int(timeout_s * 1e9)):
                conn = self._native_conns[index]
                conn.op = native.op(index)
                conn._fail("timeout", f"no reply within {timeout_s:g} s")
            return
        limit = perf_counter_ns() - int(timeout_s * 1e9)
        for conn in self.conns:
            if conn.op != IDLE and not conn.dead and conn.sent_at < limit:
                conn._fail("timeout", f"no reply within {timeout_s:g} s")

    def stop_sending(self) -> None:
        """Let in-flight requests finish; no new ones (a graceful end, counts stay exact)."""
        self.stopping = True
        if self.native is not None:
            self.native.stop_sending()
            self._native_sync()
            return
        for conn in self.conns:
            if conn.op == IDLE and not conn.finished:
                if conn.timer is not None:
                    conn.timer.cancel()
                    conn.timer = None
                conn._finish()

    def close(self) -> None:
        """Drop every connection at once (in-flight requests are abandoned)."""
        if not self.closing:     # our own close is no failure: dead_count stays as it was
            self._dead_at_close = self.dead_count()
        self.stopping = True
        self.closing = True
        if self.native is not None:
            self.native.close()
        for conn in self.conns:
            conn.abort()
            conn.finished = True
        self.active = 0
        self.done.set()

    def opened_count(self) -> int:
        return len(self.conns)

    def dead_count(self) -> int:
        """Connections that failed (turned away, closed by the server, timed out); once
        close() has dropped them all, the count from just before it."""
        if self.closing:
            return self._dead_at_close
        return sum(1 for c in self.conns if c.dead)

    def in_flight(self) -> int:
        if self.native is not None and not self.closing:
            return self.native.in_flight()
        return sum(1 for c in self.conns if c.op != IDLE and not c.dead)

    def open_connections(self) -> int:
        return sum(1 for c in self.conns if not c.dead)

    def take_latencies(self) -> tuple[array, array]:
        """Copy out and clear the latency arrays (in place: connections hold their append)."""
        if self.native is not None:
            s_bytes, g_bytes = self.native.take()
            self.lat_set.frombytes(s_bytes)
            self.lat_get.frombytes(g_bytes)
        s, g = self.lat_set[:], self.lat_get[:]
        del self.lat_set[:]
        del self.lat_get[:]
        self.ok_set += len(s)
        self.ok_get += len(g)
        return s, g
