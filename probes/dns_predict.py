"""Predict a glibc lookup's duration from what each nameserver does now, and what-ifs.

The simulation follows res_send.c (glibc 2.36, research/probes.md): for each attempt, visit the
servers (rotate shifts the start), wait `server_wait(timeout, index, nscount)` on each; A and
AAAA share one window; a refused (ICMP) server costs nothing; an error rcode or a lame answer
moves on after its reply; a truncated reply repeats the query over TCP to the same server,
where glibc has no timeout at all; a server that drops AAAA costs three windows (the pair, then
single-request, then single-request-reopen) and returns only A. The search list multiplies the
cost (inspector.discover.resolver_conf.search_names / timeout_rounds).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from inspector.discover.resolver_conf import ResolverConfig, search_names, timeout_rounds
from inspector.discover.resolver_delay import server_wait, syn_timeout, visit_order

REFUSED_COST_S = 0.001     # ICMP port unreachable arrives within a round trip
A_ONLY_WINDOWS = 3         # measured: t2 -> 6.01 s (research/probes.md)


@dataclass
class ServerState:
    """What a server does to a query, as the probe saw it (or as a what-if assumes)."""
    kind: str                       # see inspector.probes.dns_query.KINDS
    latency_s: float = 0.0
    rcode: str = "NOERROR"
    tcp_kind: str | None = None
    tcp_latency_s: float | None = None


@dataclass
class Prediction:
    seconds: float | None           # None: the lookup hangs (glibc's TCP path has no timeout)
    outcome: str                    # answered | a-only | failed | hangs | nxdomain
    steps: list[str] = field(default_factory=list)
    average: float | None = None    # with rotate: mean over the starting offsets

    def text(self) -> str:
        if self.seconds is None:
            return "hangs (no timeout on glibc's TCP path)"
        return f"{self.seconds:.3f} s ({self.outcome})"


@dataclass
class _Send:
    seconds: float | None
    ok: bool
    rcode: str = "NOERROR"
    a_only: bool = False
    steps: list[str] = field(default_factory=list)


def _one_send(cfg: ResolverConfig, states: list[ServerState], servers: list[str], offset: int,
              tcp_syn_retries: int) -> _Send:
    n = len(states)
    t = 0.0
    steps: list[str] = []
    for attempt in range(max(cfg.attempts, 0)):
        for ns in visit_order(n, offset):
            st, name = states[ns], servers[ns]
            wait = float(server_wait(cfg.timeout, ns, n))
            if cfg.use_vc:
                if st.kind in ("refused",):
                    t += REFUSED_COST_S
                    steps.append(f"{name}: TCP refused, next")
                    continue
                if st.kind in ("timeout", "unreachable"):
                    syn = syn_timeout(tcp_syn_retries)
                    t += syn
                    steps.append(f"{name}: TCP connect gives up after {syn} s (SYN retries), next")
                    continue
                if st.kind in ("answered", "a-only", "truncated"):
                    t += st.tcp_latency_s or st.latency_s
                    steps.append(f"{name}: answers over TCP")
                    return _Send(t, True, st.rcode, steps=steps)
                t += st.latency_s
                steps.append(f"{name}: {st.kind}, next")
                continue
            if st.kind == "answered":
                t += min(st.latency_s, wait)
                steps.append(f"{name}: {st.rcode} after {st.latency_s * 1000:.1f} ms")
                return _Send(t, True, st.rcode, steps=steps)
            if st.kind == "a-only":
                cost = A_ONLY_WINDOWS * wait
                t += cost
                steps.append(f"{name}: A only; AAAA waited out {A_ONLY_WINDOWS} x {wait:g} s "
                             f"(pair, single-request, single-request-reopen)")
                return _Send(t, True, st.rcode, a_only=True, steps=steps)
            if st.kind == "truncated":
                if st.tcp_kind == "answered":
                    t += st.latency_s
                    steps.append(f"{name}: truncated, answered over TCP")
                    return _Send(t, True, st.rcode, steps=steps)
                if st.tcp_kind == "refused":
                    t += st.latency_s
                    steps.append(f"{name}: truncated, TCP refused, next")
                    continue
                if st.tcp_kind == "timeout":
                    syn = syn_timeout(tcp_syn_retries)
                    t += syn
                    steps.append(f"{name}: truncated, TCP connect gives up after {syn} s, next")
                    continue
                steps.append(f"{name}: truncated; TCP accepted but never answers: glibc hangs")
                return _Send(None, False, steps=steps)
            if st.kind == "timeout":
                t += wait
                steps.append(f"{name}: silent, waited {wait:g} s")
                continue
            if st.kind == "refused":
                t += min(st.latency_s or REFUSED_COST_S, wait)
                steps.append(f"{name}: port unreachable, next at once")
                continue
            # unreachable, servfail, rcode-refused, notimp, lame, error: next after the reply
            t += min(st.latency_s, wait)
            steps.append(f"{name}: {st.kind}, next")
        if attempt + 1 < cfg.attempts:
            steps.append(f"attempt {attempt + 2}")
    return _Send(t, False, steps=steps)


def predict(cfg: ResolverConfig, states: list[ServerState], servers: list[str], name: str,
            tcp_syn_retries: int = 6) -> Prediction:
    """Expected getaddrinfo(name, AF_UNSPEC) time with these server behaviours."""
    if not states:
        return Prediction(0.0, "failed", ["no nameservers"])
    offsets = range(len(states)) if cfg.rotate else [0]
    results = [_predict_from(cfg, states, servers, name, off, tcp_syn_retries) for off in offsets]
    worst = max(results, key=lambda p: float("inf") if p.seconds is None else p.seconds)
    if cfg.rotate:
        finite = [p.seconds for p in results if p.seconds is not None]
        worst.average = sum(finite) / len(finite) if len(finite) == len(results) else None
        worst.steps.insert(0, f"rotate: worst of {len(results)} starting servers")
    else:
        worst.average = worst.seconds
    return worst


def _predict_from(cfg: ResolverConfig, states: list[ServerState], servers: list[str], name: str,
                  offset: int, tcp_syn_retries: int) -> Prediction:
    candidates = search_names(name, cfg) or [name]
    total = 0.0
    steps: list[str] = []
    for candidate in candidates:
        send = _one_send(cfg, states, servers, offset, tcp_syn_retries)
        steps.append(f"query {candidate}:")
        steps += [f"  {s}" for s in send.steps]
        if send.seconds is None:
            return Prediction(None, "hangs", steps)
        if not send.ok:
            rounds = timeout_rounds(name, cfg)
            if rounds > 1:
                steps.append(f"no server answered: glibc stops the search list but the walk "
                             f"still costs {rounds} rounds")
            return Prediction(total + send.seconds * rounds, "failed", steps)
        total += send.seconds
        if send.rcode != "NXDOMAIN":
            return Prediction(total, "a-only" if send.a_only else "answered", steps)
    return Prediction(total, "nxdomain", steps)


@dataclass
class WhatIf:
    server: str
    refused: Prediction       # its host up, DNS service down (ICMP port unreachable)
    blackholed: Prediction    # host gone or packets dropped: silence


def what_ifs(cfg: ResolverConfig, states: list[ServerState], servers: list[str], name: str,
             tcp_syn_retries: int = 6) -> list[WhatIf]:
    out = []
    for i, server in enumerate(servers):
        refused = [replace(s) for s in states]
        refused[i] = ServerState("refused", REFUSED_COST_S)
        holed = [replace(s) for s in states]
        holed[i] = ServerState("timeout")
        out.append(WhatIf(server, predict(cfg, refused, servers, name, tcp_syn_retries),
                          predict(cfg, holed, servers, name, tcp_syn_retries)))
    return out


# What other resolvers do with the same dead server, shown when the host uses them.
MUSL_NOTE = ("musl queries every nameserver in parallel and takes the first answer; `timeout` "
             "is the total for the lookup (attempts split it), so a dead first server costs "
             "almost nothing while another answers; rotate, single-request and use-vc are ignored.")
RESOLVED_NOTE = ("systemd-resolved (127.0.0.53 stub) retries a silent upstream with its own "
                 "adaptive timer, then switches to the next server and stays there: the first "
                 "lookups after a loss are slow, later ones are not; glibc's timeout and attempts "
                 "only apply to the stub, which always answers.")
