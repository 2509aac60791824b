"""QA defects of the memcached probe, each against a real memcached on loopback: IPv6 targets,
unresolvable names and closed ports, one ramp verdict, snapshot runs, per-op errors, stats
failures, the summary line, and signals that must not leave worker processes behind."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import threading
import time

import psutil
import pytest

from conftest import inspector_bin, run_bin, run_cli
from memcached_server import free_port, memcached  # noqa: F401 (pytest fixture)

from inspector.probe_runs import parse_probe_spec, run_probe
from inspector.probes.mc_stats import read_stats
from inspector.probes.memcached import MemcachedLoad, MemcachedProbe
from inspector.probes.mc_workload import SizeRange

SMALL = ["--key-size", "10-30", "--value-size", "10-300"]
# memcached's smallest item size limit: values over ~1 KiB get "SERVER_ERROR object too large"
TINY_ITEMS = ("-I", "1k", "-o", "slab_chunk_max=512")


# --- A1: IPv6 --------------------------------------------------------------------------------
def test_ipv6_loopback_target_end_to_end(memcached):
    server = memcached(host="::1")
    p = run_bin("probe", "memcached", f"[::1]:{server.port}", "-c", "2", "-e", "100", *SMALL,
                timeout=20)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and p.stderr == ""
    assert f"memcached [::1]:{server.port}: test set" in p.stdout
    assert "check cmd_set: server 200, probe sent 200: ok" in p.stdout
    assert "server counter deltas:" in p.stdout        # stats read over IPv6
    assert f"summary: memcached [::1]:{server.port}, set load on 2 connections: 200 requests" \
        in p.stdout


def test_ipv6_stats_and_ramp(memcached):
    server = memcached(host="::1")
    stats = read_stats("::1", server.port, 1.0)
    assert stats.error is None and stats.values["pid"] == server.proc.pid
    r = run_cli("probe", "memcached", f"[::1]:{server.port}", "--ramp", "--max-connections", "8",
                "--start-connections", "4", "--step-seconds", "0.2", *SMALL)
    assert r.status == 0, r.err
    assert f"ramp on [::1]:{server.port}: 4 8 connections" in r.out
    assert r.out.count("conns: opened") == 2 and "ramp completed" in r.out
    assert ("degrades at" in r.out) != ("no knee" in r.out)    # one verdict, either way


def test_a_failing_run_always_wakes_its_consumer(monkeypatch, memcached):
    """An unexpected error inside the run ends the iteration with the reason (no hang)."""
    import inspector.probes.memcached as mc
    server = memcached()

    async def broken(*_a, **_k):
        raise ValueError("boom")
    monkeypatch.setattr(mc, "read_stats_async", broken)

    async def main():
        probe = MemcachedProbe(MemcachedLoad(server.host, server.port, concurrency=1,
                                             execute_number=5))
        return [s async for s in probe], probe.summary
    samples, summary = asyncio.run(asyncio.wait_for(main(), 10))
    assert samples == [] and summary.status == "failed"
    assert "ValueError: boom" in summary.reason


# --- A2: names that do not resolve, ports that refuse -----------------------------------------
def test_unresolvable_host_fails_fast_in_one_line():
    start = time.monotonic()
    p = run_bin("probe", "memcached", "nonexistent.invalid:11211", "-e", "10", timeout=30)
    assert p.returncode == 2
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("inspector: cannot resolve nonexistent.invalid: ")
    assert "Future exception" not in p.stderr and "timed out" not in p.stderr
    assert p.stdout == ""
    assert time.monotonic() - start < 15


def test_refused_port_is_one_line_and_nothing_else():
    port = free_port()
    p = run_bin("probe", "memcached", f"127.0.0.1:{port}", "-e", "10", timeout=20)
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr == (f"inspector: probe memcached: cannot connect to 127.0.0.1:{port}: "
                        "connection refused (nothing listening on that port)\n")
    r = run_cli("probe", "memcached", f"127.0.0.1:{port}", "--ramp", "--max-connections", "64")
    assert r.status == 1 and r.out == ""
    assert r.err == (f"inspector: probe memcached ramp: cannot connect to 127.0.0.1:{port}: "
                     "connection refused (nothing listening on that port)\n")
    r = run_cli("probe", "memcached", "nonexistent.invalid", "--ramp", "--max-connections", "64")
    assert r.status == 2 and r.out == "" and r.err.count("\n") == 1
    assert r.err.startswith("inspector: cannot resolve nonexistent.invalid: ")


# --- B1: one ramp verdict -------------------------------------------------------------------
def test_ramp_prints_one_verdict_when_errors_are_not_rejections(memcached):
    server = memcached(*TINY_ITEMS)
    r = run_cli("probe", "memcached", server.address, "--ramp", "--start-connections", "4",
                "--max-connections", "8", "--step-seconds", "0.2", "--key-count", "200",
                "--key-size", "10-20", "--value-size", "10-2000")
    assert "degrades at 4 connections: errors start at 4 connections (server_error" in r.out
    assert "no knee" not in r.out


# --- B2: snapshot / record probe runs --------------------------------------------------------
def test_snapshot_probe_memcached_summary(memcached, tmp_path):
    server = memcached()
    out = tmp_path / "snap.json"
    r = run_cli("snapshot", "--probe", f"memcached:127.0.0.1:{server.port}",
                "--probe-seconds", "1", "-o", str(out))
    assert r.status == 0, r.err
    probes = json.loads(out.read_text())["probes"]
    assert len(probes) == 1
    p = probes[0]
    assert p["kind"] == "memcached" and p["error"] is None
    s = p["summary"]
    assert s["requests"] > 0 and s["ops_per_s"] > 0
    assert 0 < s["min_us"] <= s["p50_us"] <= s["p99_us"] <= s["max_us"]
    assert s["avg_us"] > 0 and s["mdev_us"] is not None and s["p99.9_us"] is not None
    assert len(s["intervals"]["p99_us"]) >= 3 and len(s["intervals"]["avg_us"]) >= 3
    # read-only: gets of absent keys, nothing stored
    stats = server.stats()
    assert stats["cmd_set"] == 0 and stats["get_misses"] == s["requests"]


def test_probe_run_ipv6_spec_and_failures_keep_their_error(memcached):
    server = memcached(host="::1")
    result = run_probe(parse_probe_spec(f"memcached:[::1]:{server.port}"), 0.5)
    assert result["error"] is None and result["summary"]["requests"] > 0
    assert result["summary"]["address"] == f"[::1]:{server.port}"
    port = free_port()
    result = run_probe(parse_probe_spec(f"memcached:127.0.0.1:{port}"), 0.5)
    assert "connection refused" in result["error"]
    assert result["summary"]["requests"] == 0 and result["summary"]["errors"] == {"connect_refused": 1}


def test_probe_run_keeps_partial_figures_when_the_server_dies(memcached):
    server = memcached()
    threading.Timer(0.6, server.kill).start()
    result = run_probe(parse_probe_spec(f"memcached:{server.address}"), 3.0)
    assert result["error"] and "closed by server" in result["error"]
    assert result["summary"]["requests"] > 0 and result["summary"]["p99_us"] > 0


# --- B12: per-op errors ----------------------------------------------------------------------
def test_err_column_counts_server_errors(memcached):
    server = memcached(*TINY_ITEMS)
    r = run_cli("probe", "memcached", server.address, "-c", "2", "-e", "200", "--key-count",
                "400", "--value-size", "10-2000", "--json")
    doc = json.loads(r.out)
    too_large = doc["errors"]["server_error"]
    assert too_large > 0 and doc["ops"]["set"]["failed"] == too_large
    assert doc["ops"]["set"]["ok"] + too_large == 400
    # memcached does not count rejected sets in cmd_set: not a mismatch, and said so
    check = next(c for c in doc["server"]["checks"] if c["counter"] == "cmd_set")
    assert check["ok"] and check["server_delta"] == doc["ops"]["set"]["ok"]
    assert "rejected" in check["note"]
    r = run_cli("probe", "memcached", server.address, "-c", "2", "-e", "200", "--key-count",
                "400", "--value-size", "10-2000")
    row = next(line.split() for line in r.out.splitlines() if line.strip().startswith("set "))
    assert row[1:4] == ["400", str(400 - too_large), str(too_large)]


def test_err_column_counts_requests_lost_when_the_server_dies(memcached):
    server = memcached()

    async def main():
        probe = MemcachedProbe(MemcachedLoad(server.host, server.port, concurrency=6,
                                             duration_s=20, key_count=100,
                                             key_size=SizeRange(10, 30),
                                             value_size=SizeRange(10, 300)))
        async for sample in probe:
            if sample.ops["set"] > 0 and server.proc.poll() is None:
                server.kill()
        return probe.summary
    summary = asyncio.run(asyncio.wait_for(main(), 20))
    lost = summary.errors["closed_by_server"]
    assert lost >= 1 and summary.ops["set"].failed == lost
    assert summary.ops["set"].sent == summary.ops["set"].ok + lost


# --- B15: stats failures ---------------------------------------------------------------------
def test_stats_of_a_stopped_memcached_is_unavailable_with_its_reason(memcached):
    server = memcached()
    os.kill(server.proc.pid, signal.SIGSTOP)     # accepts (kernel backlog), never answers
    try:
        stats = read_stats(server.host, server.port, 0.3)
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    assert stats.values is None and stats.error == "stats unavailable: timed out"


def test_stats_reply_that_is_not_stat_lines_is_explained():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)

    def answer_error() -> None:
        conn, _ = sock.accept()
        conn.recv(100)
        conn.sendall(b"ERROR\r\n")
        time.sleep(0.3)
        conn.close()
    threading.Thread(target=answer_error, daemon=True).start()
    try:
        stats = read_stats("127.0.0.1", sock.getsockname()[1], 1.0)
    finally:
        sock.close()
    assert stats.error.startswith("stats unavailable: ") and "index" not in stats.error
    assert "STAT lines" in stats.error


def test_stats_of_a_killed_server_is_unavailable(memcached):
    server = memcached()
    server.kill()
    stats = read_stats(server.host, server.port, 0.5)
    assert stats.error == "stats unavailable: connect: [Errno 111] Connection refused"


# --- signals -----------------------------------------------------------------------------------
@pytest.mark.parametrize("signum,status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_signal_stops_the_probe_and_leaves_no_child_process(memcached, signum, status):
    server = memcached()
    proc = subprocess.Popen([inspector_bin(), "probe", "memcached", server.address, "-c", "4",
                             "--workers", "2", "--duration", "60", "--key-count", "100", *SMALL],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        while server.stats()["cmd_set"] < 1000 and time.monotonic() < deadline:
            time.sleep(0.05)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 2             # the two load workers
        os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, err
    assert "status: stopped" in out and "summary: memcached" in out
    alive = [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert alive == []
