"""Real DNS responders for tests, on loopback addresses (127.0.0.x) and any port.

Server modes (`mode`, every query alike):
  ok          A 192.0.2.7 and AAAA 2001:db8::7 (NOERROR), recursion available
  nxdomain    NXDOMAIN
  servfail    SERVFAIL
  refused     rcode REFUSED
  notimp      rcode NOTIMP
  lame        NOERROR, empty, no AA, no RA, no additional (a lame referral)
  silent      bound, reads every query, never answers (a blackhole)
  dropaaaa    answers A, drops AAAA (broken middlebox / old server)
  truncate    UDP answers carry TC; the full answer comes over TCP
  tcp-silent  UDP answers carry TC; TCP accepts and never answers
Per query (`a=`, `aaaa=`, and `names={qname: mode or {"a": .., "aaaa": ..}}`), one of QUERY_MODES:
  answer, empty (NOERROR, no answer, RA: NODATA), lame, nxdomain, servfail, refused, notimp,
  formerr, truncate (TC over UDP; answered over TCP), silent.
TCP (`tcp=`): None listens only for the truncation modes; "same" answers every query as over
UDP (a truncating query is answered in full); "silent" accepts and never answers; "closed" has
no listener (connection refused); a query mode answers every TCP query that way.
Also `closed_port()` gives an address:port where nothing listens (ICMP port unreachable).
"""
from __future__ import annotations

import errno
import socket
import struct
import threading
import time

import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset

ANSWER_A = "192.0.2.7"
ANSWER_AAAA = "2001:db8::7"
QUERY_MODES = ("answer", "empty", "lame", "nxdomain", "servfail", "refused", "notimp", "formerr",
               "truncate", "silent")
_RCODES = {"nxdomain": dns.rcode.NXDOMAIN, "servfail": dns.rcode.SERVFAIL,
           "refused": dns.rcode.REFUSED, "notimp": dns.rcode.NOTIMP,
           "formerr": dns.rcode.FORMERR}
# a server mode as per-query modes over UDP (A, AAAA, anything else)
_SERVER_MODES = {"ok": ("answer", "answer"), "nxdomain": ("nxdomain",) * 2,
                 "servfail": ("servfail",) * 2, "refused": ("refused",) * 2,
                 "notimp": ("notimp",) * 2, "lame": ("lame",) * 2, "silent": ("silent",) * 2,
                 "dropaaaa": ("answer", "silent"), "truncate": ("truncate",) * 2,
                 "tcp-silent": ("truncate",) * 2}


def _reply(query: dns.message.Message, mode: str) -> dns.message.Message | None:
    """The reply to `query` in a query mode (None: no reply)."""
    if mode == "silent":
        return None
    q = query.question[0]
    reply = dns.message.make_response(query)
    reply.flags |= dns.flags.RA
    if mode in _RCODES:
        reply.set_rcode(_RCODES[mode])
    elif mode == "lame":
        reply.flags &= ~(dns.flags.RA | dns.flags.AA)
    elif mode == "truncate":
        reply.flags |= dns.flags.TC
    elif mode == "answer":
        if q.rdtype == dns.rdatatype.A:
            reply.answer.append(dns.rrset.from_text(q.name, 60, "IN", "A", ANSWER_A))
        elif q.rdtype == dns.rdatatype.AAAA:
            reply.answer.append(dns.rrset.from_text(q.name, 60, "IN", "AAAA", ANSWER_AAAA))
        elif q.rdtype == dns.rdatatype.NS:
            reply.answer.append(dns.rrset.from_text(q.name, 60, "IN", "NS", "ns.probe.test."))
    elif mode != "empty":
        raise ValueError(f"unknown query mode {mode!r}")
    return reply


class Responder:
    """A UDP (and, when asked or for truncation modes, TCP) responder in daemon threads."""

    def __init__(self, address: str = "127.0.0.1", port: int = 0, mode: str = "ok",
                 delay: float = 0.0, *, a: str | None = None, aaaa: str | None = None,
                 tcp: str | dict[str, str] | None = None,
                 names: dict[str, str | dict[str, str]] | None = None):
        if mode not in _SERVER_MODES:
            raise ValueError(f"unknown server mode {mode!r}")
        self.mode, self.delay = mode, delay     # `mode` may change while it runs
        self.a_mode, self.aaaa_mode = a, aaaa
        self.names = {k.lower().rstrip("."): v for k, v in (names or {}).items()}
        self.tcp_mode: str | dict[str, str] | None = "silent" if mode == "tcp-silent" and tcp is None else tcp
        self.queries: list[str] = []
        self.tcp_queries: list[str] = []
        self.tcp: socket.socket | None = None
        truncating = "truncate" in self.udp_modes.values() or any(
            "truncate" in (v.values() if isinstance(v, dict) else [v]) for v in self.names.values())
        wants_tcp = (tcp is None and truncating) or (tcp is not None and tcp != "closed")
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        for attempt in range(20):
            self.udp = socket.socket(family, socket.SOCK_DGRAM)
            self.udp.bind((address, port))
            self.address, self.port = self.udp.getsockname()[:2]
            if not wants_tcp:
                break
            self.tcp = socket.socket(family, socket.SOCK_STREAM)
            self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.tcp.bind((address, self.port))
                break
            except OSError as exc:
                # the UDP port the kernel chose may be another process's TCP port (a client's
                # ephemeral one): another UDP port then, unless the caller named the port
                self.tcp.close()
                self.udp.close()
                if port != 0 or exc.errno != errno.EADDRINUSE or attempt == 19:
                    raise
        if self.tcp is not None:
            self.tcp.listen(16)
            threading.Thread(target=self._serve_tcp, args=(self.tcp,), daemon=True).start()
        self._held: list[socket.socket] = []
        threading.Thread(target=self._serve_udp, daemon=True).start()

    @property
    def udp_modes(self) -> dict[str, str]:
        a_mode, aaaa_mode = _SERVER_MODES[self.mode]
        a_mode, aaaa_mode = self.a_mode or a_mode, self.aaaa_mode or aaaa_mode
        return {"A": a_mode, "AAAA": aaaa_mode, "*": a_mode}

    @property
    def server(self) -> str:
        return f"{self.address}:{self.port}"

    def query_mode(self, query: dns.message.Message, transport: str) -> str:
        q = query.question[0]
        rdtype = dns.rdatatype.to_text(q.rdtype)
        qname = q.name.to_text(omit_final_dot=True).lower()
        spec = self.names.get(qname)
        if isinstance(spec, str):
            mode = spec
        elif isinstance(spec, dict):
            mode = spec.get(rdtype.lower(), spec.get("*", "answer"))
        else:
            mode = self.udp_modes.get(rdtype, self.udp_modes["*"])
        if transport == "tcp":
            if isinstance(self.tcp_mode, dict):
                mode = self.tcp_mode.get(rdtype.lower(), mode)
            elif self.tcp_mode is not None and self.tcp_mode != "same":
                mode = self.tcp_mode
            if mode == "truncate":
                mode = "answer"
        return mode

    def _serve_udp(self) -> None:
        while True:
            try:
                data, peer = self.udp.recvfrom(4096)
            except OSError:
                return
            try:
                query = dns.message.from_wire(data)
            except Exception:
                continue
            self.queries.append(dns.rdatatype.to_text(query.question[0].rdtype))
            reply = _reply(query, self.query_mode(query, "udp"))
            if reply is None:
                continue
            if self.delay:
                time.sleep(self.delay)
            try:
                self.udp.sendto(reply.to_wire(), peer)
            except OSError:
                return

    def _serve_tcp(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            if self.tcp_mode == "silent":
                self._held.append(conn)       # accept and never answer
                continue
            threading.Thread(target=self._tcp_conn, args=(conn,), daemon=True).start()

    def _tcp_conn(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            try:
                while True:
                    head = conn.recv(2)
                    if len(head) < 2:
                        return
                    (n,) = struct.unpack("!H", head)
                    data = b""
                    while len(data) < n:
                        chunk = conn.recv(n - len(data))
                        if not chunk:
                            return
                        data += chunk
                    query = dns.message.from_wire(data)
                    self.tcp_queries.append(dns.rdatatype.to_text(query.question[0].rdtype))
                    reply = _reply(query, self.query_mode(query, "tcp"))
                    if reply is None:
                        self._held.append(conn.dup())     # this query is never answered
                        continue
                    wire = reply.to_wire()
                    conn.sendall(struct.pack("!H", len(wire)) + wire)
            except OSError:
                return

    def close(self) -> None:
        for s in [self.udp, self.tcp, *self._held]:
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass


def closed_port(address: str = "127.0.0.1") -> str:
    """An address:port with no listener (bind, note the port, close)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((address, 0))
    port = s.getsockname()[1]
    s.close()
    return f"{address}:{port}"
