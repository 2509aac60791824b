"""Query one nameserver the way glibc does, and classify what happened.

glibc's getaddrinfo(AF_UNSPEC) sends the A and AAAA queries back to back on one *connected*
UDP socket and waits for both inside one window. A connected socket is what lets glibc see an
ICMP port unreachable at once (ECONNREFUSED): dnspython's unconnected sendto never does, which
is why this module speaks the wire format itself (dnspython only builds and parses messages).
With `options use-vc` (or after a truncated reply) glibc sends both queries on one TCP
connection instead (send_vc), and so does tcp_exchange() here.

Each query's own outcome (TypeResult.outcome; A and AAAA can differ, and glibc treats each
reply on its own, see inspector.probes.dns.predict):
  answered       NOERROR with answer records
  empty          NOERROR, no answer, but authoritative or recursion available (NODATA)
  lame           NOERROR, no answer, no AA, no RA, no additional: glibc rejects it
  nxdomain       the name does not exist
  servfail / rcode-refused / notimp   an error rcode: glibc rejects the reply
  truncated      TC set: glibc repeats both queries over TCP to the same server
  silent         no reply inside the window
  formerr, ...   other rcodes, lower case: glibc accepts the reply (and fails the lookup)

Kinds (what a server does to a lookup, its queries together):
  answered       every query got a reply glibc accepts (NOERROR or NXDOMAIN)
  refused        ICMP port unreachable: glibc fails over immediately
  unreachable    ICMP host/net unreachable (or no route)
  timeout        silence for the whole window: glibc waits `timeout` seconds
  servfail / rcode-refused / notimp   an error rcode for a query
  lame           a lame reply for a query (NOERROR, no answer, no AA, no RA)
  a-only         A answered, AAAA never: glibc waits the window, then retries one by one
  partial        another query never answered
  truncated      TC set: glibc repeats the queries over TCP to the same server (no timeout!)
The detail says what each query got: a server whose A is answered and whose AAAA is lame is
"lame", yet glibc returns its A answer (dns_predict has the consequences).
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
from typing import Literal

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype

KINDS = ("answered", "refused", "unreachable", "timeout", "servfail", "rcode-refused", "notimp",
         "lame", "a-only", "partial", "truncated", "error")
# Per-query outcomes glibc's send_dg rejects (it moves on, or keeps the other query's answer).
REJECTED_OUTCOMES = frozenset({"servfail", "rcode-refused", "notimp", "lame"})
# Kinds after which glibc tries the next server (with the time they took).
FAILOVER_KINDS = {"refused", "unreachable", "timeout", "servfail", "rcode-refused", "notimp",
                  "lame", "error"}
# What a server did that fails or delays a lookup (an error in a run's figures; a server that
# did it in an earlier round and answers now is intermittent).
FAILED_KINDS = frozenset(FAILOVER_KINDS | {"a-only", "partial"})
_UNREACHABLE = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN}
STOP_POLL_S = 0.05                   # how soon a stop request ends the wait for replies

# how a server was asked: over UDP (and TCP after truncation), or over TCP only (use-vc)
Transport = Literal["udp", "tcp"]
# what a TCP exchange came to (tcp_exchange)
TcpKind = Literal["answered", "refused", "timeout", "silent-after-accept", "error"]


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
    transport: Transport = "udp"

    @property
    def outcome(self) -> str:
        """What glibc makes of this reply, in send_dg's order of checks: an error rcode, then
        a lame reply, then truncation."""
        return reply_outcome(self.rcode, self.answers, self.authoritative,
                             self.recursion_available, self.additional, self.truncated)


def reply_outcome(rcode: str | None, answers: int, authoritative: bool, recursion: bool,
                  additional: int, truncated: bool) -> str:
    if rcode is None:
        return "silent"
    if rcode in ("SERVFAIL", "NOTIMP"):
        return rcode.lower()
    if rcode == "REFUSED":
        return "rcode-refused"
    if rcode == "NOERROR" and not answers and not (authoritative or recursion or additional):
        return "lame"
    if truncated:
        return "truncated"
    if rcode == "NOERROR":
        return "answered" if answers else "empty"
    return rcode.lower()


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
    tcp_kind: TcpKind | None = None  # what TCP came to (after truncation, or with use-vc)
    tcp_types: list[TypeResult] = field(default_factory=list)   # each query's TCP reply
    transport: Transport = "udp"     # tcp: queried over TCP only, as glibc does with use-vc
    interrupted: bool = False        # stopped (Ctrl-C) before the window ended: the wait shown
                                     # is how long it lasted, not glibc's whole window

    @property
    def outcomes(self) -> dict[str, str]:
        """Each query's outcome ("A": "answered", "AAAA": "lame" ...), over UDP, or over TCP
        for a use-vc server."""
        return {t.rdtype: t.outcome for t in self.types}


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
                 stop: threading.Event | None = None, transport: Transport = "udp") -> ServerResult:
    """Send the queries (back to back) on one connected UDP socket; wait `timeout` for all.
    A truncated reply repeats them over TCP (bounded by `tcp_timeout`; glibc has no bound).
    transport="tcp" asks over TCP only, as glibc does with `options use-vc`.

    Setting `stop` ends the wait within STOP_POLL_S: the result is classified on what arrived
    so far, with `interrupted` set and the time actually waited."""
    server = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    result = ServerResult(server=server, address=address, port=port, name=name, kind="error",
                          latency_s=None, transport=transport)
    if transport == "tcp":
        return _over_tcp(result, rdtypes, tcp_timeout, edns)
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
                if any(t.rcode is not None for _, t in pending.values()):
                    break       # an error after a reply: classify what arrived
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
        _classify(result, waited)
        result.detail += " (interrupted)"
        return result
    _classify(result, timeout)
    if any(t.truncated for t in result.types):
        _tcp_retry(result, rdtypes, tcp_timeout, edns)
    return result


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


def describe(types: list[TypeResult]) -> str:
    """Each query's outcome: "A answered (1) 1.2 ms, AAAA lame"."""
    parts = []
    for t in types:
        text = f"{t.rdtype} {t.outcome}"
        if t.outcome in ("answered",):
            text += f" ({t.answers})"
        if t.latency_s is not None:
            text += f" {t.latency_s * 1000:.1f} ms"
        parts.append(text)
    return ", ".join(parts)


def _classify(result: ServerResult, timeout: float) -> ServerResult:
    """The server's kind from its queries' outcomes; the detail names each query's."""
    types = result.types
    got = [t for t in types if t.rcode is not None]
    if not got:
        result.kind, result.latency_s = "timeout", timeout
        result.detail = f"no reply in {timeout:g} s"
        return result
    result.latency_s = max((t.latency_s for t in got if t.latency_s is not None), default=None)
    result.detail = describe(types)
    outcomes = [t.outcome for t in types]
    for kind in ("servfail", "rcode-refused", "notimp", "lame", "truncated"):
        if kind in outcomes:
            result.kind = kind
            break
    else:
        missing = [t.rdtype for t in types if t.rcode is None]
        if missing:
            result.kind = "a-only" if missing == ["AAAA"] and "A" in [t.rdtype for t in got] \
                else "partial"
            result.detail += f"; {', '.join(missing)} never answered in {timeout:g} s"
            result.latency_s = timeout
        else:
            result.kind = "answered"
    answered = [t.rdtype for t in types if t.outcome == "answered"]
    if result.kind in REJECTED_OUTCOMES and answered:
        result.detail += (f" (glibc keeps the {answered[0]} reply"
                          + ("; with single-request it asks the next server)"
                             if types[0].outcome in REJECTED_OUTCOMES else ")"))
    return result


def tcp_exchange(address: str, port: int, name: str, rdtypes: list[str], timeout: float,
                 edns: bool = False) -> tuple[TcpKind, float, list[TypeResult], str]:
    """Both queries on one TCP connection, as glibc's send_vc sends them; bounded by `timeout`
    (glibc has no bound). Returns (tcp kind, seconds, each query's reply, text):
    answered | refused | timeout (connect never completed) | silent-after-accept | error."""
    queries = build_queries(name, rdtypes, edns)
    types = {q.id: TypeResult(rdtypes[i], transport="tcp") for i, q in enumerate(queries)}
    start = time.monotonic()
    deadline = start + timeout
    sock = socket.socket(_family(address), socket.SOCK_STREAM)
    sock.settimeout(timeout)
    stage = "connect"
    try:
        sock.connect((address, port))
        stage = "reply"
        sock.sendall(b"".join(struct.pack("!H", len(w)) + w for w in (q.to_wire() for q in queries)))
        while any(t.rcode is None for t in types.values()):
            head = _recv_exact(sock, 2, deadline)
            body = _recv_exact(sock, struct.unpack("!H", head)[0], deadline)
            msg = dns.message.from_wire(body, ignore_trailing=True)
            if msg.id in types and types[msg.id].rcode is None:
                _fill(types[msg.id], msg, time.monotonic() - start)
        elapsed = time.monotonic() - start
        replies = list(types.values())
        return ("answered", elapsed, replies,
                f"over TCP in {elapsed * 1000:.1f} ms: {describe(replies)}")
    except TimeoutError:
        if stage == "connect":
            return ("timeout", time.monotonic() - start, list(types.values()),
                    f"TCP connect timed out after {timeout:g} s")
        return ("silent-after-accept", time.monotonic() - start, list(types.values()),
                f"TCP accepted but no reply in {timeout:g} s (glibc would hang)")
    except ConnectionRefusedError:
        return "refused", time.monotonic() - start, list(types.values()), "TCP connection refused"
    except (OSError, EOFError, ValueError, dns.exception.DNSException) as exc:
        return "error", time.monotonic() - start, list(types.values()), f"TCP: {exc}"
    finally:
        sock.close()


def _tcp_retry(result: ServerResult, rdtypes: list[str], tcp_timeout: float, edns: bool) -> None:
    """glibc repeats truncated queries over TCP to the same server, both on one connection;
    its TCP path has no timeout, so ours is bounded and reported separately."""
    kind, seconds, replies, text = tcp_exchange(result.address, result.port, result.name,
                                                rdtypes, tcp_timeout, edns)
    result.tcp_kind, result.tcp_latency_s, result.tcp_types, result.tcp = kind, seconds, replies, text
    result.latency_s = max(result.latency_s or 0, seconds)
    result.detail = f"truncated over UDP; {text}"


def add_tcp(result: ServerResult, rdtypes: list[str], tcp_timeout: float, edns: bool = False) -> None:
    """What the server does over TCP, for a server glibc may reach over TCP although it does
    not truncate (glibc keeps TCP for the servers after one that truncated). The UDP verdict
    stays."""
    kind, seconds, replies, text = tcp_exchange(result.address, result.port, result.name,
                                                rdtypes, tcp_timeout, edns)
    result.tcp_kind, result.tcp_latency_s, result.tcp_types, result.tcp = kind, seconds, replies, text


def _over_tcp(result: ServerResult, rdtypes: list[str], timeout: float, edns: bool) -> ServerResult:
    """use-vc: glibc asks over TCP only, one try per server, and waits for ever for a server
    that accepted; the kind says what a UDP-minded reader expects (refused, timeout ...)."""
    kind, seconds, replies, text = tcp_exchange(result.address, result.port, result.name,
                                                rdtypes, timeout, edns)
    result.tcp_kind, result.tcp_latency_s, result.tcp, result.latency_s = kind, seconds, text, seconds
    result.types = result.tcp_types = replies
    if kind == "answered":
        _classify(result, timeout)
        result.detail = text
    else:
        result.kind = {"refused": "refused", "timeout": "timeout",
                       "silent-after-accept": "timeout"}.get(kind, "error")
        result.detail = text
    return result


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    buf = b""
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError()
        sock.settimeout(left)
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed by server")
        buf += chunk
    return buf
