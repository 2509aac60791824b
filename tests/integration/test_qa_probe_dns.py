"""QA defects in `inspector probe dns`: Ctrl-C while a nameserver is silent."""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from conftest import inspector_bin, signal_after
from dns_responders import Responder


@pytest.fixture
def servers():
    made = [Responder("127.0.0.1", 0, "silent"), Responder("127.0.0.1", 0, "ok")]
    yield made
    for r in made:
        r.close()


def _interrupt(args: list[str], after: float) -> tuple[int, str, str, float]:
    """The binary as from a terminal, Ctrl-C after `after` s."""
    return signal_after([inspector_bin(), *args], after, env={**os.environ, "COLUMNS": "200"})


def test_ctrl_c_during_a_silent_servers_wait_exits_at_once_with_what_arrived(servers):
    # The silent server is first: glibc's wait for it is 5 s. Ctrl-C used to be honoured only
    # when that wait was over (asyncio's executor shutdown joined the query thread): 3.8 s later.
    silent, ok = servers
    status, out, err, took = _interrupt(
        ["probe", "dns", "example.com", "--server", silent.server, "--server", ok.server,
         "--json"], after=1.5)
    assert status == 130, err
    assert took < 1.0, f"exited {took:.2f} s after Ctrl-C"
    doc = json.loads(out)
    by = {s["server"]: s for s in doc["servers"]}
    assert by[ok.server]["kind"] == "answered" and not by[ok.server]["interrupted"]
    quiet = by[silent.server]
    assert quiet["interrupted"] and quiet["kind"] == "timeout"
    assert quiet["detail"].endswith("(interrupted)") and quiet["latency_s"] < 5


def test_ctrl_c_in_a_later_round_keeps_the_last_complete_round(servers):
    # rounds of 3 s (the silent server's wait): Ctrl-C lands in round 2
    silent, ok = servers
    status, out, err, took = _interrupt(
        ["probe", "dns", "example.com", "--server", silent.server, "--server", ok.server,
         "--count", "5", "--interval", "0", "--timeout", "3"], after=4.5)
    assert status == 130, err
    assert took < 1.0, f"exited {took:.2f} s after Ctrl-C"
    # the interrupted round is not shown as a measurement, live or in the table
    live = [line for line in out.splitlines() if line.startswith("round ")]
    assert f"round 1 {silent.server}" in "\n".join(live)
    assert all("interrupted" not in line for line in live)
    assert "no reply in 3 s" in out and "(interrupted)" not in out


def test_failover_finding_reads_hang_when_the_next_server_hangs_glibc():
    # the second server truncates and its TCP never answers: losing the first one makes
    # every lookup hang. The finding read "would make lookups take hangs (...)".
    made = [Responder("127.0.0.1", 0, "ok"), Responder("127.0.0.1", 0, "tcp-silent")]
    try:
        proc = subprocess.run(
            [inspector_bin(), "probe", "dns", "example.com", "--json", "--tcp-timeout", "0.5",
             "--server", made[0].server, "--server", made[1].server],
            capture_output=True, text=True, timeout=30)
    finally:
        for r in made:
            r.close()
    doc = json.loads(proc.stdout)
    failover = [f for f in doc["findings"] if f.get("code") == "dns.failover_delay"]
    assert failover, doc["findings"]
    text = failover[0]["message"]
    assert "take hangs" not in text
    assert "would make lookups hang (no timeout on glibc's TCP path)" in text


def test_ctrl_c_during_the_getaddrinfo_measurement_exits_at_once(tmp_path):
    # getaddrinfo against a silent server takes glibc's whole failover (5 s here, up to the
    # 60 s bound): Ctrl-C used to wait for it. A private mount namespace gives this run its own
    # /etc/resolv.conf.
    from conftest import require_root
    require_root()
    silent = Responder("127.45.67.89", 53, "silent")
    conf = tmp_path / "resolv.conf"
    conf.write_text("nameserver 127.45.67.89\noptions timeout:5 attempts:1\n")
    try:
        cmd = (f"mount --bind {conf} /etc/resolv.conf && exec {inspector_bin()} probe dns "
               "example.com --timeout 0.5 --measure-getaddrinfo --json")
        # start-up and the 0.5 s round are over after 2.5 s: getaddrinfo is waiting
        status, out, err, took = signal_after(["unshare", "-m", "sh", "-c", cmd], 2.5)
    finally:
        silent.close()
    assert status == 130, err
    assert took < 1.0, f"exited {took:.2f} s after Ctrl-C"
    measured = json.loads(out)["getaddrinfo"]
    assert measured["seconds"] is None
    assert measured["result"].startswith("interrupted after ")


def test_sigterm_stops_like_ctrl_c_with_its_own_status(servers):
    # SIGTERM killed the probe with nothing printed while a silent server was being waited for
    silent, ok = servers
    status, out, err, took = signal_after(
        [inspector_bin(), "probe", "dns", "example.com", "--server", silent.server, "--server",
         ok.server, "--json"], 1.5, signal.SIGTERM)
    assert status == 128 + signal.SIGTERM, err
    assert took < 1.0
    doc = json.loads(out)
    assert [s["interrupted"] for s in doc["servers"]] == [True, False]


def test_several_rounds_are_summed_up_not_only_the_last(servers):
    # with --count the table showed the last round only: a server that timed out in 2 rounds
    # of 3 and answered in the last read "answered"
    silent, ok = servers
    proc = subprocess.run([inspector_bin(), "probe", "dns", "example.com", "--server",
                           silent.server, "--server", ok.server, "--count", "2", "--interval",
                           "0", "--timeout", "0.3"], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "COLUMNS": "120"})
    assert proc.returncode == 1, proc.stderr
    assert "servers (as glibc queries them), last round" in proc.stdout
    assert "every round (2)" in proc.stdout
    rows = {line.split("│")[0].strip(): line.split("│")[1].strip()
            for line in proc.stdout.splitlines() if line.count("│") == 1}
    assert rows[silent.server] == "timeout 2/2" and rows[ok.server] == "answered 2/2", rows


def test_a_server_that_failed_in_an_earlier_round_is_a_finding():
    # the verdict was the last round alone: silent in round 1, answering in rounds 2-3 gave
    # no finding at all (and exit 0)
    import asyncio
    from inspector.discover.resolver_conf import parse_resolv_conf
    from inspector.health.dns import probe_rules
    from inspector.probes.dns_failover import DnsFailoverProbe, DnsProbeSettings
    flappy, steady = Responder("127.0.0.1", 0, "silent"), Responder("127.0.0.1", 0, "ok")
    try:
        probe = DnsFailoverProbe(DnsProbeSettings(
            servers=[(flappy.address, flappy.port), (steady.address, steady.port)],
            resolver=parse_resolv_conf("nameserver 127.0.0.1\n"), name="example.com",
            timeout=0.3, count=3, interval=0))

        async def run():
            async for sample in probe.samples():
                if sample.round == 0:
                    flappy.mode = "ok"          # answers from round 2 on
        asyncio.run(run())
        result = probe.result()
    finally:
        flappy.close()
        steady.close()
    assert [r.kind for r in result.servers] == ["answered", "answered"]
    found = [f for f in probe_rules(result) if f.code == "dns.intermittent"]
    assert len(found) == 1 and found[0].subject == flappy.server
    assert "failed in 1 of 3 rounds (timeout x1)" in found[0].message
    assert found[0].evidence == ["round 1: timeout"]


@pytest.mark.parametrize("name, why", [("a..b", "A DNS label is empty"),
                                       ("a" * 70 + ".com", "A DNS label is > 63 octets long")])
def test_a_name_no_query_can_carry_is_a_usage_error(name, why):
    # it was "inspector: internal error: EmptyLabel: ..." from a query thread
    r = subprocess.run([inspector_bin(), "probe", "dns", "--server", "127.0.0.1:9", name],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert r.stderr.strip() == f"inspector: invalid name {name!r}: {why}."
    assert "internal error" not in r.stderr
