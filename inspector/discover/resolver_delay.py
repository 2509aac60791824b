"""How long a glibc lookup waits when nameservers are blackholed (res_send.c). Pure functions.

API (the DNS failover probe builds on it):

    server_wait(timeout, index, nscount) -> int
        seconds send_dg waits on server `index` (0-based position in resolv.conf):
        timeout << index, divided by nscount when index > 0, at least 1.
        3 servers, timeout 5: 5, 3, 6 s.  2 servers: 5, 5 s.
    visit_order(nscount, offset) -> list[int]
        servers in the order one res_send visits them (offset 0 unless rotate).
    first_server_loss(config) -> DelayEstimate
        extra delay of one lookup while the first server is blackholed (silent) and the
        others answer. With rotate, `seconds` is the worst lookup and `average` the mean
        over the rotation offsets.
    all_servers_down(config, name="host") -> DelayEstimate
        time until a lookup of `name` fails when every server is blackholed:
        attempts x sum(server waits) x timeout_rounds(name) (search list: usually x2).
    syn_timeout(tcp_syn_retries) -> int
        seconds a TCP connect() to a blackholed address takes: 2**(retries+1) - 1 (127 s at 6).

Measured with glibc 2.36 in a network namespace (tests/glibc_lab.py runs such cases against
the real getaddrinfo; tests/unit/test_dns_predict.py keeps these): silent,up = 5.011 s;
silent,silent,up = 8.016 s; 3 silent t3 a1 = 9.013 s; 3 silent t1 a2 = 6.014 s; 2 silent t2 a2
= 8.014 s. getaddrinfo(AF_UNSPEC) sends A and AAAA together (or, with single-request, one
after the other) inside one window per server, so the pair costs what one query costs.
A server that refuses (ICMP port unreachable, glibc >= 2.30) fails over at once: no delay.
use-vc (TCP) has no timeout of its own: a blackholed server costs the kernel's SYN retries
(~127 s) and a server that accepts but never answers hangs the lookup for ever.
"""
from __future__ import annotations

from dataclasses import dataclass

from inspector.discover.resolver_conf import ResolverConfig, timeout_rounds


@dataclass
class DelayEstimate:
    """How long glibc lookups wait in one failure case, with the arithmetic."""
    seconds: float | None       # None: unbounded (hangs until the application gives up)
    average: float | None       # mean over rotate offsets (equals seconds without rotate)
    explanation: str            # the arithmetic, for the report
    fails: bool = False         # the lookup fails instead of being answered late


def server_wait(timeout: int, index: int, nscount: int) -> int:
    seconds = timeout << index if timeout >= 0 else -((-timeout) << index)
    if index > 0 and nscount:
        seconds = int(seconds / nscount)   # C division truncates toward zero
    return seconds if seconds > 0 else 1


def visit_order(nscount: int, offset: int = 0) -> list[int]:
    return [(offset + i) % nscount for i in range(nscount)]


def syn_timeout(tcp_syn_retries: int = 6) -> int:
    return (1 << (max(tcp_syn_retries, 0) + 1)) - 1


def first_server_loss(cfg: ResolverConfig, tcp_syn_retries: int = 6) -> DelayEstimate:
    servers = cfg.used_nameservers
    n = len(servers)
    if cfg.attempts <= 0:
        return DelayEstimate(0, 0, f"attempts:{cfg.attempts}: glibc sends no query at all",
                             fails=True)
    if n <= 1:
        est = all_servers_down(cfg, name=None, tcp_syn_retries=tcp_syn_retries)
        est.explanation = "the only nameserver: losing it fails every lookup, after " + \
            est.explanation
        return est
    if cfg.use_vc:
        syn = syn_timeout(tcp_syn_retries)
        return DelayEstimate(syn, syn if not cfg.rotate else syn / n,
                             f"use-vc: TCP connect to a blackholed {servers[0]} gives up after "
                             f"the kernel's SYN retries ({syn} s); a server that accepts and "
                             f"never answers hangs the lookup for ever")
    wait = server_wait(cfg.timeout, 0, n)
    if not cfg.rotate:
        return DelayEstimate(wait, wait, f"{servers[0]} waited {wait} s (timeout {cfg.timeout}"
                             f"{', min 1' if cfg.timeout < 1 else ''}), then {servers[1]} answers")
    # rotate: only the lookups whose rotation starts at the dead server pay its wait
    return DelayEstimate(wait, wait / n, f"rotate: 1 lookup in {n} starts at {servers[0]} and "
                         f"waits {wait} s; the others start at a live server")


def all_servers_down(cfg: ResolverConfig, name: str | None = "host",
                     tcp_syn_retries: int = 6) -> DelayEstimate:
    servers = cfg.used_nameservers
    n = len(servers)
    if cfg.attempts <= 0:
        return DelayEstimate(0, 0, f"attempts:{cfg.attempts}: glibc sends no query at all",
                             fails=True)
    rounds = timeout_rounds(name, cfg) if name else 1
    rounds_text = f" x {rounds} (search list, then the name as is)" if rounds > 1 else ""
    if cfg.use_vc:
        syn = syn_timeout(tcp_syn_retries)
        total = syn * n * rounds
        return DelayEstimate(total, total, f"use-vc: one TCP try per server, {n} x {syn} s SYN "
                             f"retries{rounds_text}; unbounded if a server accepts and never "
                             f"answers", fails=True)
    waits = [server_wait(cfg.timeout, i, n) for i in range(n)]
    per_try = sum(waits)
    total = cfg.attempts * per_try * rounds
    parts = " + ".join(str(w) for w in waits)
    parts = f"({parts})" if len(waits) > 1 else parts
    attempts = f"{cfg.attempts} attempt{'s' if cfg.attempts != 1 else ''}"
    return DelayEstimate(total, total, f"{attempts} x {parts} s{rounds_text} = "
                         f"{total} s", fails=True)
