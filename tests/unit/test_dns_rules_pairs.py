"""DNS findings for a server whose two queries differ: glibc keeps a good A reply when the
AAAA reply is lame or SERVFAIL (send_dg), so the advice must not say it skips the server."""
from __future__ import annotations

from inspector.health.dns import probe_rules
from inspector.probes.dns.failover import DnsProbeResult
from inspector.probes.dns.predict import Prediction
from inspector.probes.dns.query import ServerResult, TypeResult


def _server(aaaa: TypeResult) -> ServerResult:
    a = TypeResult("A", "NOERROR", answers=1, latency_s=0.001, recursion_available=True)
    result = ServerResult("127.0.0.2:53", "127.0.0.2", 53, "example.test", kind="lame",
                          latency_s=0.001, types=[a, aaaa], detail="A answered, AAAA lame")
    return result


def _findings(server: ServerResult):
    result = DnsProbeResult(name="example.test", servers=[server],
                            prediction=Prediction(0.001, "answered"), what_ifs=[],
                            nameservers=["127.0.0.2", "127.0.0.3"])
    return [f for f in probe_rules(result) if f.code == "dns.server_error"]


def test_a_answered_aaaa_lame_says_glibc_keeps_the_a_reply():
    server = _server(TypeResult("AAAA", "NOERROR", answers=0, latency_s=0.001))
    assert server.outcomes == {"A": "answered", "AAAA": "lame"}
    [finding] = _findings(server)
    assert "AAAA lame" in finding.message and "A answered" in finding.message
    assert "keeps the A reply" in finding.advice and "skips" not in finding.advice


def test_both_queries_rejected_says_glibc_moves_on():
    server = _server(TypeResult("AAAA", "SERVFAIL", latency_s=0.001))
    server.types[0] = TypeResult("A", "SERVFAIL", latency_s=0.001)
    server.kind = "servfail"
    [finding] = _findings(server)
    assert finding.advice == "glibc skips it and asks the next server"
