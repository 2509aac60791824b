"""DNS failover probe against real responders on loopback, and against real glibc in a private
network and mount namespace (prediction vs measured getaddrinfo)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import TESTS, inspector_bin, require_root, run_cli, signal_when
from dns_responders import Responder, closed_port
from inspector.discover.resolver_conf import parse_resolv_conf
from inspector.health.dns import probe_rules
from inspector.probes.dns.failover import DnsFailoverProbe, DnsProbeSettings
from inspector.probes.dns.query import parse_server, query_server
from slowness import slack

# mode -> (expected kind, bound on how long the query may take, seconds)
CASES = {
    "ok": ("answered", 0.5), "nxdomain": ("answered", 0.5), "servfail": ("servfail", 0.5),
    "refused": ("rcode-refused", 0.5), "notimp": ("notimp", 0.5), "lame": ("lame", 0.5),
    "silent": ("timeout", 1.2), "dropaaaa": ("a-only", 1.2), "truncate": ("truncated", 0.5),
    "tcp-silent": ("truncated", 1.2),
}


@pytest.fixture
def responders():
    made = []

    def make(mode, address="127.0.0.1"):
        r = Responder(address, 0, mode)
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


@pytest.mark.parametrize("mode", list(CASES))
def test_each_behaviour_is_classified_within_its_bound(responders, mode):
    r = responders(mode)
    start = time.monotonic()
    res = query_server(r.address, r.port, "probe.test", ["A", "AAAA"], timeout=1.0, tcp_timeout=1.0)
    elapsed = time.monotonic() - start
    kind, bound = CASES[mode]
    assert res.kind == kind, res
    assert elapsed < bound + 0.3
    if mode == "nxdomain":
        assert {t.rcode for t in res.types} == {"NXDOMAIN"}
    if mode == "truncate":
        assert res.tcp_kind == "answered" and all(t.transport == "tcp" for t in res.tcp_types)
        assert res.outcomes == {"A": "truncated", "AAAA": "truncated"}
        assert {t.rdtype: t.outcome for t in res.tcp_types} == {"A": "answered", "AAAA": "answered"}
    if mode == "tcp-silent":
        assert res.tcp_kind == "silent-after-accept" and res.tcp is not None and "hang" in res.tcp
    if mode in ("silent", "dropaaaa"):
        assert sorted(r.queries) == ["A", "AAAA"]      # both sent, as glibc does


def test_closed_port_is_refused_at_once():
    addr, port = parse_server(closed_port())
    start = time.monotonic()
    res = query_server(addr, port, "probe.test", ["A", "AAAA"], timeout=2.0)
    assert res.kind == "refused" and time.monotonic() - start < 0.2


def test_tcp_listener_that_never_answers_is_bounded(responders):
    r = responders("tcp-silent")
    start = time.monotonic()
    res = query_server(r.address, r.port, "probe.test", ["A"], timeout=1.0, tcp_timeout=0.5)
    assert res.kind == "truncated" and res.tcp_kind == "silent-after-accept"
    assert time.monotonic() - start < 1.0


def test_probe_rounds_findings_and_prediction(responders):
    silent, ok, aonly = responders("silent", "127.0.0.21"), responders("ok", "127.0.0.22"), responders("dropaaaa", "127.0.0.23")
    cfg = parse_resolv_conf("nameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\noptions timeout:1 attempts:2\n")
    probe = DnsFailoverProbe(DnsProbeSettings(
        servers=[(s.address, s.port) for s in (silent, ok, aonly)], resolver=cfg, name="probe.test",
        count=2, interval=0.1))

    async def collect():
        return [s async for s in probe.samples()]
    import asyncio
    samples = asyncio.run(collect())
    assert len(samples) == 6 and {s.kind for s in samples} == {"timeout", "answered", "a-only"}
    result = probe.result()
    assert result.history[silent.server] == ["timeout", "timeout"]
    # silent first server (1 s), then the answering one: ~1 s
    assert result.prediction.seconds == pytest.approx(1.0, abs=0.05)
    codes = {(f.code, f.level.label) for f in probe_rules(result)}
    assert ("dns.server_down", "crit") in codes and ("dns.a_only", "warn") in codes
    # what-ifs: the answering server blackholed -> 1 s + 1 s + A-only 3 windows
    w = {x.server: x for x in result.what_ifs}
    assert w[ok.server].blackholed.seconds == pytest.approx(1 + 1 + 3 * 1, abs=0.05)
    refused_seconds = w[silent.server].refused.seconds
    assert refused_seconds is not None and refused_seconds < 0.1


def test_cli_json_and_errors(responders, tmp_path):
    r = responders("ok")
    conf = tmp_path / "resolv.conf"
    conf.write_text("nameserver 127.0.0.1\nnameserver 127.0.0.2\nnameserver 127.0.0.3\nnameserver 127.0.0.4\n"
                    "options timeout:3 attempts:2 rotate\n")
    res = run_cli("probe", "dns", "probe.test", "--resolv-conf", str(conf), "--server", r.server, "--json")
    assert res.status == 0, res.err
    doc = res.json()
    assert doc["servers"][0]["kind"] == "answered" and doc["prediction"]["outcome"] == "answered"
    assert run_cli("probe", "dns", "--server", "not-an-ip").status == 2
    assert run_cli("probe", "dns", "--resolv-conf", str(tmp_path / "missing")).status == 2
    res = run_cli("probe", "dns", "probe.test", "--resolv-conf", str(conf))   # 4 servers: 4th ignored
    assert "ignores nameservers past the third: 127.0.0.4" in res.out


def test_single_nameserver_is_a_finding(responders, tmp_path):
    r = responders("ok")
    conf = tmp_path / "resolv.conf"
    conf.write_text(f"nameserver {r.address}\noptions timeout:2 attempts:3\n")
    res = run_cli("probe", "dns", "probe.test", "--resolv-conf", str(conf), "--server", r.server,
                  "--json")
    assert res.status == 0, res.err
    single = [f for f in res.json()["findings"] if f["code"] == "dns.single_nameserver"]
    assert len(single) == 1
    assert "every lookup fails after 6 s" in single[0]["message"]   # 3 attempts x 2 s


# ----------------------------------------------------------------------------- real glibc
GLIBC_CASES = [
    # name, server modes (127.0.0.1.. in order), options
    ("first_refused", ["closed", "ok"], "timeout:1 attempts:2"),
    ("first_silent", ["silent", "ok"], "timeout:1 attempts:2"),
    ("first_two_silent", ["silent", "silent", "ok"], "timeout:1 attempts:2"),
    ("all_silent", ["silent", "silent", "silent"], "timeout:1 attempts:1"),
    ("a_only", ["dropaaaa", "ok"], "timeout:1 attempts:2"),
    ("first_silent_t2", ["silent", "ok"], "timeout:2 attempts:1"),
]

NETNS_SCRIPT = textwrap.dedent("""
    import json, os, subprocess, sys, tempfile
    from concurrent.futures import ThreadPoolExecutor
    sys.path.insert(0, sys.argv[1])
    from dns_responders import Responder
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    out = {}
    # what the probe must see of a responder in each mode; anything else is the test box
    # stalling a responder thread, and the case is run once more
    EXPECTED_KIND = {"closed": "refused", "ok": "answered", "silent": "timeout", "dropaaaa": "a-only"}

    def run_case(n, case, modes, options, attempt):
        keep = []
        conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
        for i, mode in enumerate(modes):
            addr = f"127.{attempt}.{n + 1}.{i + 1}"
            if mode != "closed":
                keep.append(Responder(addr, 53, mode))
            conf.write(f"nameserver {addr}\\n")
        conf.write(f"options {options}\\n")
        conf.close()
        # the case's own mount namespace (in this network namespace): its /etc/resolv.conf,
        # whatever the cases beside it mount
        script = 'mount --bind "$1" /etc/resolv.conf && exec "$2" probe dns probe.test ' \\
                 '--measure-getaddrinfo --json'
        try:
            proc = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", conf.name,
                                   sys.argv[2]], capture_output=True, text=True, timeout=60)
            doc = json.loads(proc.stdout) if proc.stdout.strip() else None
            seen = [r.queries for r in keep]
        finally:
            os.unlink(conf.name)
            for r in keep:
                r.close()
        kinds = [s["kind"] for s in doc["servers"]] if doc else None
        return {"rc": proc.returncode, "stderr": proc.stderr[-2000:], "doc": doc, "seen": seen,
                "kinds": kinds, "attempt": attempt,
                "consistent": kinds == [EXPECTED_KIND[m] for m in modes]}

    def agrees(got):
        # the test's own check: prediction and glibc within max(50 ms, 10 %)
        if not got["consistent"] or not got["doc"]:
            return False
        predicted = got["doc"]["prediction"]["seconds"]
        measured = got["doc"]["getaddrinfo"]["seconds"]
        return measured is not None and predicted is not None and \\
            abs(predicted - measured) <= max(0.05, 0.10 * measured)

    # the cases wait on glibc's timeouts, not on the CPU: all at once, each in its own
    # addresses and mount namespace (one after the other they took 22-29 s, three at a time
    # 8.4 s, all six 5.4-6.1 s: the longest case's 3 s and a start-up). A case whose responder thread was stalled (the probe saw
    # another reply, or a reply late: 125 ms for 24 ms at load 30) runs again alone, as
    # glibc_lab.py does: a wrong prediction disagrees both times
    cases = json.loads(sys.argv[3])
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        firsts = list(pool.map(lambda each: run_case(each[0], *each[1], 0), enumerate(cases)))
    for n, ((case, modes, options), first) in enumerate(zip(cases, firsts)):
        out[case] = first if agrees(first) else run_case(n, case, modes, options, 1)
    print(json.dumps(out))
""")


# wall-clock seconds against real getaddrinfo, and the prediction rests on what the probe saw
# of each responder: beside 3 workers' load the a_only case was once predicted 3.0 s against
# glibc's 1.0 s (a fresh-clone run; the cause was not pinned down), alone it matches
@pytest.mark.serial
def test_prediction_matches_real_glibc_getaddrinfo():
    require_root()
    if subprocess.run(["unshare", "-nm", "true"]).returncode != 0:
        pytest.fail("unshare -nm is not possible here: the glibc failover test needs it (root, namespaces)")
    proc = subprocess.run(["unshare", "-nm", sys.executable, "-c", NETNS_SCRIPT, str(TESTS),
                           inspector_bin(), json.dumps(GLIBC_CASES)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    for case, modes, _options in GLIBC_CASES:
        got = results[case]
        assert got["doc"], (case, got["stderr"])
        predicted = got["doc"]["prediction"]["seconds"]
        measured = got["doc"]["getaddrinfo"]["seconds"]
        assert measured is not None, (case, got["doc"]["getaddrinfo"])
        print(f"{case:18} predicted {predicted:.3f} s  measured {measured:.3f} s"
              + (" (second attempt, alone: the first disagreed)" if got["attempt"] else ""))
        assert got["consistent"], (case, modes, got["kinds"], got["seen"])
        tolerance = max(0.05, 0.10 * measured)
        assert abs(predicted - measured) <= tolerance, (case, predicted, measured, got["doc"]["prediction"]["steps"])
        if case == "a_only":
            assert got["doc"]["prediction"]["outcome"] == "answered"
            assert got["doc"]["prediction"]["families"] == ["IPv4"]
            assert got["doc"]["getaddrinfo"]["result"] == "192.0.2.7"
            assert got["doc"]["getaddrinfo"]["families"] == ["IPv4"]
        if case == "all_silent":
            assert got["doc"]["getaddrinfo"]["result"].startswith("failed")


# Defects of `inspector probe dns`: Ctrl-C while a nameserver is silent.

@pytest.fixture
def servers():
    made = [Responder("127.0.0.1", 0, "silent"), Responder("127.0.0.1", 0, "ok")]
    yield made
    for r in made:
        r.close()


def _prompt_bound() -> float:
    """How soon a signal during a 5 s wait must end the probe: 1 s on a quiet machine, more
    on a loaded one, but 2 s at most: the defects these tests catch exited only when the
    wait was over, 3.5 s or more after the signal."""
    return min(slack(1.0), 2.0)


def _until(ready, what: str) -> None:
    """Poll `ready()` every 20 ms until it holds; fails after slack(10) s."""
    deadline = time.monotonic() + slack(10)
    while not ready():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.02)


def _signal_when(argv: list[str], wait, signum: int = signal.SIGINT
                 ) -> tuple[int, str, str, float]:
    """conftest.signal_when, at 200 columns, once `wait()` returns."""
    return signal_when(argv, lambda _proc: wait(), signum,
                       env={**os.environ, "COLUMNS": "200"})


def _both_asked(silent: Responder, ok: Responder) -> None:
    """The probe is waiting for the silent server: both were asked, the other answered (a
    moment for its answers to be read)."""
    _until(lambda: silent.queries and len(ok.queries) >= 2, "asked both servers")
    time.sleep(0.3)


@pytest.mark.serial
def test_ctrl_c_during_a_silent_servers_wait_exits_at_once_with_what_arrived(servers):
    # The silent server is first: glibc's wait for it is 5 s. Ctrl-C used to be honoured only
    # when that wait was over (asyncio's executor shutdown joined the query thread): 3.8 s later.
    silent, ok = servers
    status, out, err, took = _signal_when(
        [inspector_bin(), "probe", "dns", "example.com", "--server", silent.server, "--server",
         ok.server, "--json"], lambda: _both_asked(silent, ok))
    assert status == 130, err
    assert took < _prompt_bound(), f"exited {took:.2f} s after Ctrl-C"
    doc = json.loads(out)
    by = {s["server"]: s for s in doc["servers"]}
    assert by[ok.server]["kind"] == "answered" and not by[ok.server]["interrupted"]
    quiet = by[silent.server]
    assert quiet["interrupted"] and quiet["kind"] == "timeout"
    assert quiet["detail"].endswith("(interrupted)") and quiet["latency_s"] < 5


@pytest.mark.serial
def test_ctrl_c_in_a_later_round_keeps_the_last_complete_round(servers):
    # rounds of 3 s (the silent server's wait): Ctrl-C lands in round 2
    silent, ok = servers

    def in_round_2() -> None:
        _both_asked(silent, ok)
        first_round = len(ok.queries)
        # round 2 asks the answering server again once round 1 ends (3 s)
        _until(lambda: len(ok.queries) > first_round, "began round 2")
        time.sleep(0.3)
    status, out, err, took = _signal_when(
        [inspector_bin(), "probe", "dns", "example.com", "--server", silent.server, "--server",
         ok.server, "--count", "5", "--interval", "0", "--timeout", "3"], in_round_2)
    assert status == 130, err
    # the defect exited with the round's wait, 2.7 s after the signal: the bound grows with
    # the machine's slowness as the others' do (1.11 s once at load 11 on 2 cores)
    assert took < _prompt_bound(), f"exited {took:.2f} s after Ctrl-C"
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


@pytest.mark.serial
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
        def measuring() -> None:
            # the probe's 0.5 s round asks first; getaddrinfo's own queries come after it
            _until(lambda: silent.queries, "asked the server")
            time.sleep(0.3)
            round_queries = len(silent.queries)
            _until(lambda: len(silent.queries) > round_queries, "began getaddrinfo")
            time.sleep(0.3)
        status, out, err, took = _signal_when(["unshare", "-m", "sh", "-c", cmd], measuring)
    finally:
        silent.close()
    assert status == 130, err
    assert took < _prompt_bound(), f"exited {took:.2f} s after Ctrl-C"
    measured = json.loads(out)["getaddrinfo"]
    assert measured["seconds"] is None
    assert measured["result"].startswith("interrupted after ")


@pytest.mark.serial
def test_sigterm_stops_like_ctrl_c_with_its_own_status(servers):
    # SIGTERM killed the probe with nothing printed while a silent server was being waited for
    silent, ok = servers
    status, out, err, took = _signal_when(
        [inspector_bin(), "probe", "dns", "example.com", "--server", silent.server, "--server",
         ok.server, "--json"], lambda: _both_asked(silent, ok), signal.SIGTERM)
    assert status == 128 + signal.SIGTERM, err
    assert took < _prompt_bound(), f"exited {took:.2f} s after SIGTERM"
    doc = json.loads(out)
    assert [s["interrupted"] for s in doc["servers"]] == [True, False]


def test_several_rounds_are_summed_up_not_only_the_last(servers):
    # with --count the table showed the last round only: a server that timed out in 2 rounds
    # of 3 and answered in the last read "answered"
    silent, ok = servers
    proc = subprocess.run([inspector_bin(), "probe", "dns", "example.com", "--server",
                           silent.server, "--server", ok.server, "--count", "2", "--interval",
                           "0", "--timeout", f"{slack(0.3):.2f}"], capture_output=True, text=True,
                          timeout=30,
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
    from inspector.probes.dns.failover import DnsFailoverProbe, DnsProbeSettings
    flappy, steady = Responder("127.0.0.1", 0, "silent"), Responder("127.0.0.1", 0, "ok")
    try:
        probe = DnsFailoverProbe(DnsProbeSettings(
            servers=[(flappy.address, flappy.port), (steady.address, steady.port)],
            resolver=parse_resolv_conf("nameserver 127.0.0.1\n"), name="example.com",
            # the answering server's 0.3 s, scaled: beside two busy loops its responder
            # thread missed 0.3 s once and it too "failed in an earlier round"
            timeout=slack(0.3), count=3, interval=0))

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
