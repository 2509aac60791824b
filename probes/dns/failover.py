"""DNS failover probe: each nameserver checked the way glibc uses it, the failover delay
predicted from what the servers do now, and optionally measured with the real getaddrinfo.

Use:
    probe = DnsFailoverProbe(DnsProbeSettings(servers=[("127.0.0.1", 53)], name="example.com",
                                               resolver=parse_resolv_conf(text)))
    async for sample in probe.samples():      # one DnsSample per server per round
        ...
    result = probe.result()                    # DnsProbeResult: servers, prediction, what-ifs
    inspector.health.dns.probe_rules(result)   # its findings, in the resolver's vocabulary
(probes.dns_run puts it behind the probe interface: configuration, rounds as intervals).

Every server is queried concurrently in its own thread with its own bound, so one silent
server never delays the verdict on the others, for every name glibc may ask (the search list
with ndots applied: servers answer per name), over TCP with use-vc, and over TCP as well once a
server truncates (glibc stays on TCP for the servers after it); a round takes at most
timeout + 2 x tcp_timeout.
stop() ends a round's waits for UDP replies at once (a first round then keeps what arrived,
marked interrupted; a later one is dropped and the last complete round stays the verdict).
"""
from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import dns.exception

from inspector.discover.resolver_conf import ResolverConfig, search_names
from inspector.discover.resolver_delay import server_wait
from inspector.probes.dns.predict import (
    MUSL_NOTE,
    RESOLVED_NOTE,
    Behaviour,
    Prediction,
    Reply,
    ServerState,
    WhatIf,
    predict,
    what_ifs,
)
from inspector.probes.dns.query import (
    ServerResult,
    Transport,
    TypeResult,
    add_tcp,
    build_queries,
    query_server,
)

MAX_ROUNDS = 10_000
MAX_TIMEOUT_S = 30.0
MAX_NAMES = 7               # the name as is and a search list of six: what glibc may ask


@dataclass
class DnsProbeSettings:
    servers: list[tuple[str, int]]
    resolver: ResolverConfig
    name: str = "."
    rdtypes: list[str] = field(default_factory=lambda: ["A", "AAAA"])
    timeout: float | None = None        # per-server wait; default: glibc's wait for that server
    tcp_timeout: float = 3.0
    count: int = 1                      # rounds
    interval: float = 1.0
    measure_getaddrinfo: bool = False
    getaddrinfo_bound: float = 60.0
    tcp_syn_retries: int = 6
    resolver_kind: str = "glibc"        # glibc | musl | systemd-resolved (what the host uses)


@dataclass
class DnsSample:
    t: float                            # seconds since the probe started
    round: int
    server: str
    kind: str
    latency_ms: float | None


@dataclass
class Measured:
    seconds: float | None
    result: str                         # addresses or the gaierror text
    bounded_out: bool = False
    families: list[str] = field(default_factory=list)   # IPv4, IPv6 of the addresses


@dataclass
class DnsProbeResult:
    name: str
    servers: list[ServerResult]
    prediction: Prediction
    what_ifs: list[WhatIf]
    getaddrinfo: Measured | None = None
    rounds: int = 0
    history: dict[str, list[str]] = field(default_factory=dict)   # server -> kinds per round
    other_resolver_note: str | None = None
    options: list[str] = field(default_factory=list)
    nameservers: list[str] = field(default_factory=list)   # the configuration's (first three)
    use_vc: bool = False
    # the names glibc may ask, in its order (the first is `servers`'), and each one's servers
    names: list[str] = field(default_factory=list)
    by_name: dict[str, list[ServerResult]] = field(default_factory=dict)


def server_label(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


class DnsFailoverProbe:
    def __init__(self, settings: DnsProbeSettings):
        if not settings.servers:
            raise ValueError("no nameservers to probe")
        try:       # a name no query can carry ("a..b", a label over 63 bytes): say so now,
            build_queries(settings.name, settings.rdtypes)    # not from every query thread
        except (dns.exception.DNSException, ValueError) as exc:
            raise ValueError(f"invalid name {settings.name!r}: {exc}") from None
        settings.count = max(1, min(settings.count, MAX_ROUNDS))
        self.s = settings
        self.names = query_names(settings)
        self._stop = threading.Event()
        self._last: list[ServerResult] = []
        self._last_by_name: dict[str, list[ServerResult]] = {}
        self._history: dict[str, list[str]] = {server_label(a, p): [] for a, p in settings.servers}
        self._rounds = 0
        self._measured: Measured | None = None
        self._start = time.monotonic()

    # ------------------------------------------------------------------ probing
    def _wait_for(self, index: int) -> float:
        if self.s.timeout is not None:
            return min(max(self.s.timeout, 0.05), MAX_TIMEOUT_S)
        n = len(self.s.servers)
        return float(min(server_wait(self.s.resolver.timeout, min(index, 2), min(n, 3)), MAX_TIMEOUT_S))

    def probe_round(self) -> list[ServerResult]:
        """Every server asked for every name glibc may ask (the first name's results are the
        round's), concurrently, each with its own bound."""
        transport: Transport = "tcp" if self.s.resolver.use_vc else "udp"
        jobs = [(name, i, addr, port) for name in self.names
                for i, (addr, port) in enumerate(self.s.servers)]
        with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="dns") as pool:
            futures = [pool.submit(query_server, addr, port, name, self.s.rdtypes,
                                   self._wait_for(i), self.s.tcp_timeout, self.s.resolver.edns0,
                                   self._stop, transport)
                       for name, i, addr, port in jobs]
            done = [f.result() for f in futures]
            if transport == "udp" and any(r.tcp_kind for r in done):
                # after a truncated reply glibc stays on TCP for the servers that come next
                rest = [r for r in done if r.tcp_kind is None and r.kind not in
                        ("refused", "unreachable") and not r.interrupted]
                for f in [pool.submit(add_tcp, r, self.s.rdtypes, self.s.tcp_timeout,
                                      self.s.resolver.edns0) for r in rest]:
                    f.result()
        n = len(self.s.servers)
        by_name = {name: done[k * n:(k + 1) * n] for k, name in enumerate(self.names)}
        results = by_name[self.names[0]]
        if self._rounds and any(r.interrupted for r in done):
            return results      # stopped mid-round: the last complete round stays the verdict
        self._last, self._last_by_name = results, by_name
        self._rounds += 1
        for r in results:
            self._history[r.server].append(r.kind)
        return results

    def stop(self) -> None:
        self._stop.set()

    async def samples(self) -> AsyncIterator[DnsSample]:
        """Async iterator of DnsSample, one per server per round, `count` rounds `interval` apart."""
        async for samples in self.rounds():
            for sample in samples:
                yield sample

    async def rounds(self) -> AsyncIterator[list[DnsSample]]:
        """Async iterator of each round's DnsSamples (a server stopped mid-wait is left out:
        how long it waited is not a measurement), `count` rounds `interval` apart."""
        loop = asyncio.get_running_loop()
        for round_no in range(self.s.count):
            if self._stop.is_set():
                return
            started = time.monotonic()
            results = await loop.run_in_executor(None, self.probe_round)
            yield [DnsSample(time.monotonic() - self._start, round_no, r.server, r.kind,
                             None if r.latency_s is None else r.latency_s * 1000)
                   for r in results if not r.interrupted]
            if round_no + 1 < self.s.count:
                delay = self.s.interval - (time.monotonic() - started)
                if delay > 0:
                    try:
                        await asyncio.wait_for(loop.run_in_executor(None, self._stop.wait, delay), delay + 1)
                    except TimeoutError:
                        pass
        if self.s.measure_getaddrinfo and not self._stop.is_set():
            self._measured = await loop.run_in_executor(None, self.measure_getaddrinfo)

    @property
    def rounds_done(self) -> int:
        return self._rounds

    def measure_getaddrinfo(self) -> Measured:
        """The real thing, in a worker thread with its own bound (glibc can hang on TCP)."""
        box: dict = {}

        def lookup() -> None:
            start = time.monotonic()
            try:
                infos = socket.getaddrinfo(self.s.name, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
                box["result"] = ", ".join(sorted({str(i[4][0]) for i in infos}))
                box["families"] = [name for family, name in ((socket.AF_INET, "IPv4"),
                                                             (socket.AF_INET6, "IPv6"))
                                   if any(i[0] == family for i in infos)]
            except socket.gaierror as exc:
                box["result"] = f"failed: {exc.strerror or exc}"
            except (UnicodeError, OSError) as exc:
                box["result"] = f"failed: {exc}"
            box["seconds"] = time.monotonic() - start

        thread = threading.Thread(target=lookup, daemon=True, name="getaddrinfo")
        start = time.monotonic()
        thread.start()
        end = start + self.s.getaddrinfo_bound
        # in slices, so stop() (Ctrl-C) does not wait for glibc's whole failover (up to the
        # bound); the daemon thread is left to finish on its own
        while thread.is_alive() and not self._stop.is_set() and time.monotonic() < end:
            thread.join(min(0.05, max(0.0, end - time.monotonic())))
        if thread.is_alive():
            if self._stop.is_set():
                return Measured(None, f"interrupted after {time.monotonic() - start:.1f} s "
                                      "(getaddrinfo had not returned)")
            return Measured(None, f"did not return within {self.s.getaddrinfo_bound:g} s", True)
        return Measured(box["seconds"], box["result"], families=box.get("families", []))

    # ------------------------------------------------------------------ results
    def states(self) -> list[Behaviour]:
        """Each server's behaviour for the prediction: one state, or one per name asked."""
        out: list[Behaviour] = []
        for i, r in enumerate(self._last):
            if len(self.names) == 1:
                out.append(server_state(r))
            else:
                out.append({name.rstrip(".").lower(): server_state(rs[i])
                            for name, rs in self._last_by_name.items()})
        return out

    def result(self) -> DnsProbeResult:
        servers = [r.server for r in self._last]
        used = servers[:3]          # glibc never queries past the third
        states = self.states()[:3]
        prediction = predict(self.s.resolver, states, used, self.s.name, self.s.tcp_syn_retries,
                             self.s.rdtypes)
        whatifs = what_ifs(self.s.resolver, states, used, self.s.name, self.s.tcp_syn_retries,
                           self.s.rdtypes)
        note = {"musl": MUSL_NOTE, "systemd-resolved": RESOLVED_NOTE}.get(self.s.resolver_kind)
        return DnsProbeResult(
            name=self.s.name, servers=list(self._last), prediction=prediction, what_ifs=whatifs,
            getaddrinfo=self._measured, rounds=self._rounds,
            history={k: list(v) for k, v in self._history.items()}, other_resolver_note=note,
            options=self.s.resolver.option_words(),
            nameservers=list(self.s.resolver.used_nameservers), use_vc=self.s.resolver.use_vc,
            names=list(self.names),
            by_name={k: list(v) for k, v in self._last_by_name.items()} if len(self.names) > 1
            else {})


def query_names(settings: DnsProbeSettings) -> list[str]:
    """The names glibc's getaddrinfo may ask for settings.name, in its order (the search list
    and ndots applied; every one when the ones before are not found)."""
    if settings.name == "." or settings.rdtypes == ["NS"]:
        return [settings.name]
    names = search_names(settings.name, settings.resolver) or [settings.name]
    return list(dict.fromkeys(names))[:MAX_NAMES]


def _reply(t: TypeResult) -> Reply | None:
    if t.rcode is None:
        return None
    return Reply(t.rcode, t.answers, t.latency_s or 0.0, t.authoritative, t.recursion_available,
                 t.additional, t.truncated)


_TCP_CONNECT = {"answered": "accepted", "silent-after-accept": "accepted", "refused": "refused",
                "timeout": "timeout"}


def server_state(r: ServerResult) -> ServerState:
    """What the probe saw of a server, as the prediction's input."""
    tcp = _TCP_CONNECT.get(r.tcp_kind or "", "error") if r.tcp_kind else None
    tcp_replies = {t.rdtype: _reply(t) for t in r.tcp_types}
    if r.transport == "tcp":            # use-vc: what UDP would do is not known, nor needed
        return ServerState(None, tcp=tcp, tcp_replies=tcp_replies,
                           tcp_latency_s=r.tcp_latency_s or 0.0, kind=r.kind)
    if r.kind in ("refused", "unreachable", "error") and not any(t.rcode for t in r.types):
        return ServerState(None, udp_error="port-unreachable" if r.kind == "refused" else r.kind,
                           error_after_s=r.latency_s or 0.0,
                           tcp="refused" if r.kind == "refused" else tcp, kind=r.kind)
    return ServerState(None, {t.rdtype: _reply(t) for t in r.types}, tcp=tcp,
                       tcp_replies=tcp_replies, tcp_latency_s=r.tcp_latency_s or 0.0,
                       kind=r.kind)
