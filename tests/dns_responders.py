"""Real DNS responders for tests, on loopback addresses (127.0.0.x) and any port.

Modes:
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
Also `closed_port()` gives an address:port where nothing listens (ICMP port unreachable).
"""
from __future__ import annotations

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


def _reply(query: dns.message.Message, mode: str) -> dns.message.Message | None:
    q = query.question[0]
    reply = dns.message.make_response(query)
    reply.flags |= dns.flags.RA
    if mode == "nxdomain":
        reply.set_rcode(dns.rcode.NXDOMAIN)
    elif mode == "servfail":
        reply.set_rcode(dns.rcode.SERVFAIL)
    elif mode == "refused":
        reply.set_rcode(dns.rcode.REFUSED)
    elif mode == "notimp":
        reply.set_rcode(dns.rcode.NOTIMP)
    elif mode == "lame":
        reply.flags &= ~(dns.flags.RA | dns.flags.AA)
    else:
        if q.rdtype == dns.rdatatype.AAAA and mode == "dropaaaa":
            return None
        if q.rdtype == dns.rdatatype.A:
            reply.answer.append(dns.rrset.from_text(q.name, 60, "IN", "A", ANSWER_A))
        elif q.rdtype == dns.rdatatype.AAAA:
            reply.answer.append(dns.rrset.from_text(q.name, 60, "IN", "AAAA", ANSWER_AAAA))
    return reply


class Responder:
    """A UDP (and, for truncation modes, TCP) responder in daemon threads."""

    def __init__(self, address: str = "127.0.0.1", port: int = 0, mode: str = "ok", delay: float = 0.0):
        self.mode, self.delay = mode, delay
        self.queries: list[str] = []
        self.udp = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((address, port))
        self.address, self.port = self.udp.getsockname()[:2]
        self.tcp = None
        if mode in ("truncate", "tcp-silent"):
            self.tcp = socket.socket(self.udp.family, socket.SOCK_STREAM)
            self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.tcp.bind((address, self.port))
            self.tcp.listen(16)
            threading.Thread(target=self._serve_tcp, daemon=True).start()
        self._held: list[socket.socket] = []
        threading.Thread(target=self._serve_udp, daemon=True).start()

    @property
    def server(self) -> str:
        return f"{self.address}:{self.port}"

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
            if self.mode == "silent":
                continue
            reply = _reply(query, "ok" if self.mode in ("truncate", "tcp-silent") else self.mode)
            if reply is None:
                continue
            if self.mode in ("truncate", "tcp-silent"):
                reply.answer.clear()
                reply.flags |= dns.flags.TC
            if self.delay:
                time.sleep(self.delay)
            try:
                self.udp.sendto(reply.to_wire(), peer)
            except OSError:
                return

    def _serve_tcp(self) -> None:
        while True:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            if self.mode == "tcp-silent":
                self._held.append(conn)       # accept and never answer
                continue
            threading.Thread(target=self._tcp_conn, args=(conn,), daemon=True).start()

    def _tcp_conn(self, conn: socket.socket) -> None:
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
                    reply = _reply(dns.message.from_wire(data), "ok")
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
