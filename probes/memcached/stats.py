"""memcached server counters (python-memcached's `stats`) before and after a probe, their deltas,
and the check that the server counted exactly the commands the probe sent."""
from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field

import memcache

from inspector.probes.memcached.target import is_numeric

# counters that only grow: report after - before
COUNTERS = ("total_connections", "rejected_connections", "listen_disabled_num", "conn_yields",
            "evictions", "cmd_get", "cmd_set", "get_hits", "get_misses", "cmd_flush")
# gauges: report before and after
GAUGES = ("curr_connections", "max_connections", "curr_items")
STATS_TIMEOUT_S = 2.0


@dataclass
class ServerStats:
    values: dict[str, int] | None
    error: str | None = None

    def get(self, name: str) -> int | None:
        return None if self.values is None else self.values.get(name)


def server_spec(host: str, port: int) -> str:
    """python-memcached's server string: IPv6 needs the explicit "inet6:[addr]:port" form (a
    bare "[::1]:port" raises ValueError in its parser)."""
    if ":" in host:
        return f"inet6:[{host}]:{port}"
    if not is_numeric(host):   # a name: connect to the family it resolves to
        try:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        except (OSError, UnicodeError):
            family = socket.AF_INET      # the connect fails and says why
        if family == socket.AF_INET6:
            return f"inet6:[{host}]:{port}"
    return f"inet:{host}:{port}"


def read_stats(host: str, port: int, timeout: float = STATS_TIMEOUT_S) -> ServerStats:
    """Blocking; never raises. A fresh client each time: python-memcached remembers dead servers.
    Every failure reads "stats unavailable: <reason>"."""
    try:
        client = memcache.Client([server_spec(host, port)], socket_timeout=timeout, dead_retry=0)
    except ValueError as exc:
        return ServerStats(None, f"stats unavailable: {exc}")
    server = client.servers[0]
    dead: list[str] = []
    mark_dead = server.mark_dead

    def remember(reason: str) -> None:    # python-memcached only logs why a server failed
        dead.append(str(reason))
        mark_dead(reason)
    server.mark_dead = remember
    try:
        data = client.get_stats()
    except IndexError:
        # get_stats splits each line as "STAT name value": another reply (ERROR...) breaks it
        return ServerStats(None, "stats unavailable: the server did not answer 'stats' with "
                                 "STAT lines")
    except Exception as exc:   # python-memcached raises a handful of socket/protocol errors
        return ServerStats(None, f"stats unavailable: {exc or type(exc).__name__}")
    finally:
        client.disconnect_all()
    if not data:
        why = dead[0] if dead else "could not connect to the server"
        return ServerStats(None, f"stats unavailable: {why}")
    raw = data[0][1]
    if "pid" not in raw:
        text = " ".join(f"{k} {v}".strip() for k, v in raw.items()).strip()
        if not text:
            why = dead[0] if dead else "no reply"
            return ServerStats(None, f"stats unavailable: {why}")
        return ServerStats(None, f"stats unavailable: unexpected reply {text[:120]!r}")
    values: dict[str, int] = {}
    for name, text in raw.items():
        try:
            values[name] = int(text)
        except (TypeError, ValueError):
            continue
    return ServerStats(values)


async def read_stats_async(host: str, port: int, timeout: float = STATS_TIMEOUT_S) -> ServerStats:
    return await asyncio.to_thread(read_stats, host, port, timeout)


@dataclass
class CounterCheck:
    """Does the server's delta for one counter match what the probe sent?"""
    counter: str
    server_delta: int | None
    probe_sent: int
    probe_answered: int
    ok: bool | None          # None: the server's counters are unknown
    note: str = ""


@dataclass
class ServerCounters:
    before: dict[str, int] | None
    after: dict[str, int] | None
    deltas: dict[str, int] = field(default_factory=dict)
    gauges: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    checks: list[CounterCheck] = field(default_factory=list)
    error: str | None = None

    @property
    def mismatches(self) -> list[CounterCheck]:
        return [c for c in self.checks if c.ok is False]


def compare(before: ServerStats, after: ServerStats, sent: dict[str, int],
            answered: dict[str, int], uncounted: dict[str, int] | None = None) -> ServerCounters:
    """`sent`/`answered` per server counter name (cmd_set, cmd_get, get_hits+get_misses...);
    `uncounted`: answered requests the server leaves out of that counter (memcached rejects a
    set with SERVER_ERROR "object too large" before counting it in cmd_set)."""
    uncounted = uncounted or {}
    error = before.error or after.error
    out = ServerCounters(before.values, after.values, error=error)
    if before.values is not None and after.values is not None:
        for name in COUNTERS:
            if name in before.values and name in after.values:
                out.deltas[name] = after.values[name] - before.values[name]
        if "get_hits" in out.deltas and "get_misses" in out.deltas:
            out.deltas["get_hits+get_misses"] = out.deltas["get_hits"] + out.deltas["get_misses"]
    for name in GAUGES:
        out.gauges[name] = (before.get(name), after.get(name))
    for name in sent:
        delta = out.deltas.get(name)
        s, a = sent[name], answered.get(name, sent[name])
        if delta is None:
            out.checks.append(CounterCheck(name, None, s, a, None,
                                           f"server counters unknown ({error or 'missing'})"))
            continue
        # a request written but never answered (Ctrl-C, timeout) may or may not have been counted
        rejected = uncounted.get(name, 0)
        ok = a - rejected <= delta <= s
        note = ""
        if ok and rejected:
            note = (f"{rejected} rejected with an error reply (not counted by the server)"
                    + (f", {s - a} unanswered" if a != s else "") + f"; server counted {delta}")
        elif not ok:
            note = (f"server counted {delta}, probe sent {s} (answered {a})"
                    + ("; other clients may be using this server" if delta > s else
                       "; the server did not count every command the probe sent"))
        elif a != s:
            note = f"{s - a} request(s) unanswered; server counted {delta}"
        out.checks.append(CounterCheck(name, delta, s, a, ok, note))
    return out
