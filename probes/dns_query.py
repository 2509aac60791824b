"""Query one nameserver the way glibc does, and classify what happened.

glibc's getaddrinfo(AF_UNSPEC) sends the A and AAAA queries back to back on one *connected*
UDP socket and waits for both inside one window. A connected socket is what lets glibc see an
ICMP port unreachable at once (ECONNREFUSED): dnspython's unconnected sendto never does, which
is why this module speaks the wire format itself (dnspython only builds and parses messages).

Kinds (what a server does to a lookup):
  answered       NOERROR or NXDOMAIN for every query sent (rcode recorded)
  refused        ICMP port unreachable: glibc fails over immediately
  unreachable    ICMP host/net unreachable (or no route)
  timeout        silence for the whole window: glibc waits `timeout` seconds
  servfail / rcode-refused / notimp   an error rcode: glibc moves to the next server
  lame           NOERROR, no answer, not authoritative, no recursion, no additional (res_send.c)
  a-only         A answered, AAAA never: glibc waits the window, then retries one by one
  truncated      TC set: glibc repeats the query over TCP to the same server (no timeout there!)
"""
from __future__ import annotations

import errno
import ipaddress
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype

KINDS = ("answered", "refused", "unreachable", "timeout", "servfail", "rcode-refused", "notimp",
         "lame", "a-only", "truncated", "error")
# Kinds after which glibc tries the next server (with the time they took).
FAILOVER_KINDS = {"refused", "unreachable", "timeout", "servfail", "rcode-refused", "notimp",
                  "lame", "error"}
# What a server did that fails or delays a lookup (an error in a run's figures; a server that
# did it in an earlier round and answers now is intermittent).
FAILED_KINDS = frozenset(FAILOVER_KINDS | {"a-only", "partial"})
_RCODE_KIND = {dns.rcode.SERVFAIL: "servfail", dns.rcode.REFUSED: "rcode-refused",
               dns.rcode.NOTIMP: "notimp"}
_UNREACHABLE = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN}
STOP_POLL_S = 0.05                   # how soon a stop request ends the wait for replies


@dataclass
class TypeResult:
    rdtype: str
    rcode: str | None = None         # NOERROR, NXDOMAIN, SERVFAIL ...
    answers: int = 0
    latency_s: float | None = None
    truncated: bool = False
    authoritative: bool = False
    recursion_available: bool = False
    additional: int = 0
    transport: str = "udp"


@dataclass
class ServerResult:
    server: str                      # "127.0.0.1:53"
    address: str
    port: int
    name: str
    kind: str
    latency_s: float | None          # time until glibc would have what it waits for
    detail: str = ""
    types: list[TypeResult] = field(default_factory=list)
    tcp: str | None = None           # after truncation: "answered in 2.1 ms", "timeout after 2 s"
    tcp_latency_s: float | None = None
    tcp_kind: str | None = None      # answered | refused | timeout | silent-after-accept | error
    interrupted: bool = False        # stopped (Ctrl-C) before the window ended: the wait shown
                                     # is how long it lasted, not glibc's whole window


def parse_server(text: str, default_port: int = 53) -> tuple[str, int]:
    """"ADDR", "ADDR:PORT", "[v6]:PORT" or a bare IPv6 address -> (address, port)."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") else default_port
    elif text.count(":") == 1:
        host, port_s = text.split(":")
        port = int(port_s)
    else:
        host, port = text, default_port
    ipaddress.ip_address(host.split("%", 1)[0])   # raises ValueError for a non-address
    if not 0 < port < 65536:
        raise ValueError(f"port out of range: {port}")
    return host, port


def _family(address: str) -> int:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def build_queries(name: str, rdtypes: list[str], edns: bool = False) -> list[dns.message.Message]:
    return [dns.message.make_query(name, rdtype, use_edns=0 if edns else False) for rdtype in rdtypes]


def query_server(address: str, port: int, name: str, rdtypes: list[str], timeout: float,
                 tcp_timeout: float = 2.0, edns: bool = False,
                 stop: threading.Event | None = None) -> ServerResult:
    """Send the queries (back to back) on one connected UDP socket; wait `timeout` for all.

    Setting `stop` ends the wait within STOP_POLL_S: the result is classified on what arrived
    so far, with `interrupted` set and the time actually waited."""
    server = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    result = ServerResult(server=server, address=address, port=port, name=name, kind="error",
                          latency_s=None)
    queries = build_queries(name, rdtypes, edns)
    pending = {q.id: (q, TypeResult(rdtypes[i])) for i, q in enumerate(queries)}
    result.types = [t for _, t in pending.values()]
    sock = socket.socket(_family(address), socket.SOCK_DGRAM)
    start = time.monotonic()
    try:
        sock.setblocking(False)
        try:
            sock.connect((address, port))
            for q in queries:
                sock.send(q.to_wire())
        except OSError as exc:
            return _socket_error(result, exc, time.monotonic() - start)
        deadline = start + timeout
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLERR)
        while any(t.rcode is None for _, t in pending.values()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if stop is not None:
                if stop.is_set():
                    result.interrupted = True
                    break
                left = min(left, STOP_POLL_S)
            if not poller.poll(left * 1000):
                continue
            try:
                data = sock.recv(65535)
            except BlockingIOError:
                continue
            except OSError as exc:
                return _socket_error(result, exc, time.monotonic() - start)
            now = time.monotonic()
            try:
                msg = dns.message.from_wire(data, ignore_trailing=True, question_only=False)
            except Exception:
                # A reply glibc cannot parse is dropped and the wait goes on (res_send.c).
                result.detail = "unparsable reply ignored"
                continue
            entry = pending.get(msg.id)
            if entry is None or entry[1].rcode is not None:
                continue
            _fill(entry[1], msg, now - start)
    finally:
        sock.close()
    if result.interrupted:
        waited = round(time.monotonic() - start, 2)
        _classify(result, pending, waited, tcp_timeout, edns, tcp=False)
        result.detail += " (interrupted)"
        return result
    return _classify(result, pending, timeout, tcp_timeout, edns)


def _fill(t: TypeResult, msg: dns.message.Message, latency: float) -> None:
    t.rcode = dns.rcode.to_text(msg.rcode())
    t.answers = sum(len(rrset) for rrset in msg.answer)
    t.latency_s = latency
    t.truncated = bool(msg.flags & dns.flags.TC)
    t.authoritative = bool(msg.flags & dns.flags.AA)
    t.recursion_available = bool(msg.flags & dns.flags.RA)
    t.additional = len(msg.additional)


def _socket_error(result: ServerResult, exc: OSError, elapsed: float) -> ServerResult:
    result.latency_s = elapsed
    if exc.errno == errno.ECONNREFUSED:
        result.kind, result.detail = "refused", "ICMP port unreachable (nothing listens on the port)"
    elif exc.errno in _UNREACHABLE:
        result.kind, result.detail = "unreachable", f"{exc.strerror} (ICMP or no route)"
    else:
        result.kind, result.detail = "error", exc.strerror or str(exc)
    return result


def _classify(result: ServerResult, pending: dict, timeout: float, tcp_timeout: float,
              edns: bool, tcp: bool = True) -> ServerResult:
    types = [t for _, t in pending.values()]
    got = [t for t in types if t.rcode is not None]
    if not got:
        result.kind, result.latency_s = "timeout", timeout
        result.detail = f"no reply in {timeout:g} s"
        return result
    result.latency_s = max(t.latency_s for t in got)
    for t in got:   # glibc acts on the first error rcode it sees
        code = dns.rcode.from_text(t.rcode)
        if code in _RCODE_KIND:
            result.kind, result.detail = _RCODE_KIND[code], f"{t.rdtype}: {t.rcode}"
            return result
    truncated = [t for t in got if t.truncated]
    if truncated:
        result.kind = "truncated"
        for t in truncated if tcp else ():
            _tcp_retry(result, t, tcp_timeout, edns)
            if result.tcp_kind != "answered":   # one bounded TCP failure is the verdict
                break
        return result
    for t in got:
        if (t.rcode == "NOERROR" and t.answers == 0 and not t.authoritative
                and not t.recursion_available and not t.additional):
            result.kind, result.detail = "lame", f"{t.rdtype}: lame referral (no answer, no AA, no RA)"
            return result
    if len(got) < len(types):
        missing = [t.rdtype for t in types if t.rcode is None]
        result.kind = "a-only" if missing == ["AAAA"] else "partial"
        result.detail = f"{', '.join(missing)} never answered in {timeout:g} s"
        result.latency_s = timeout
        return result
    result.kind = "answered"
    result.detail = ", ".join(f"{t.rdtype} {t.rcode} ({t.answers})" for t in got)
    return result


def _tcp_retry(result: ServerResult, t: TypeResult, tcp_timeout: float, edns: bool) -> None:
    """glibc repeats a truncated query over TCP to the same server; its TCP path has no timeout,
    so ours is bounded and reported separately."""
    query = build_queries(result.name, [t.rdtype], edns)[0]
    wire = query.to_wire()
    start = time.monotonic()
    sock = socket.socket(_family(result.address), socket.SOCK_STREAM)
    sock.settimeout(tcp_timeout)
    stage = "connect"
    try:
        sock.connect((result.address, result.port))
        stage = "reply"
        sock.sendall(struct.pack("!H", len(wire)) + wire)
        head = _recv_exact(sock, 2, start + tcp_timeout)
        body = _recv_exact(sock, struct.unpack("!H", head)[0], start + tcp_timeout)
        msg = dns.message.from_wire(body, ignore_trailing=True)
        elapsed = time.monotonic() - start
        result.tcp_kind = "answered"
        result.tcp_latency_s = elapsed
        result.tcp = f"{dns.rcode.to_text(msg.rcode())} over TCP in {elapsed * 1000:.1f} ms"
        _fill(t, msg, (t.latency_s or 0) + elapsed)
        t.transport = "tcp"
    except socket.timeout:
        result.tcp_kind = "timeout" if stage == "connect" else "silent-after-accept"
        result.tcp = (f"TCP connect timed out after {tcp_timeout:g} s" if stage == "connect"
                      else f"TCP accepted but no reply in {tcp_timeout:g} s (glibc would hang)")
        result.tcp_latency_s = time.monotonic() - start
    except ConnectionRefusedError:
        result.tcp_kind, result.tcp = "refused", "TCP connection refused"
        result.tcp_latency_s = time.monotonic() - start
    except (OSError, EOFError, ValueError, dns.exception.DNSException) as exc:
        result.tcp_kind, result.tcp = "error", f"TCP: {exc}"
        result.tcp_latency_s = time.monotonic() - start
    finally:
        sock.close()
    result.latency_s = max(result.latency_s or 0, t.latency_s or 0)
    result.detail = f"truncated over UDP; {result.tcp}"


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    buf = b""
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        sock.settimeout(left)
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed by server")
        buf += chunk
    return buf
