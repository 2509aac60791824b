"""`inspector probe memcached` and the connection ramp against a real memcached."""
from __future__ import annotations

import asyncio
import json
import resource
import time

import uvloop

from conftest import run_bin, run_cli
from memcached_server import free_port, memcached  # noqa: F401 (pytest fixture)

from inspector.probes.mc_ramp import MemcachedRamp, RampConfig
from inspector.probes.mc_workload import SizeRange

SMALL = ["--key-size", "10-30", "--value-size", "10-300"]


def test_ramp_past_the_connection_limit_names_the_step(memcached):
    server = memcached("-c", "64")
    cfg = RampConfig(server.host, server.port, start=32, max_connections=256, step_s=0.3,
                     key_count=200, key_size=SizeRange(10, 20), value_size=SizeRange(10, 100))
    before = server.stats()

    async def main():
        ramp = MemcachedRamp(cfg)
        steps = [step async for step in ramp]
        return steps, ramp.summary
    start = time.monotonic()
    steps, summary = uvloop.run(main())
    assert time.monotonic() - start < 8
    after = server.stats()
    assert [s.connections for s in steps] == [32, 64, 128, 256]
    assert summary.status == "completed" and summary.max_connections_server == 64
    assert steps[0].errors == {} and steps[0].ops > 0
    # the server turns connections away beyond its limit; every rejection is seen and counted
    rejected = sum(s.errors.get("too_many_connections", 0) for s in steps)
    assert rejected > 0
    assert rejected == after["rejected_connections"] - before["rejected_connections"]
    for s in steps:
        assert s.server_rejected == s.errors.get("too_many_connections", 0)
    assert steps[-1].errors["too_many_connections"] >= 256 - 64
    assert summary.errors_start_connections in (64, 128)
    assert summary.knee_connections <= summary.errors_start_connections
    assert "connections" in summary.knee_reason


def test_cli_ramp_text_names_the_step(memcached):
    server = memcached("-c", "64")
    r = run_cli("probe", "memcached", server.address, "--ramp", "--max-connections", "128",
                "--step-seconds", "0.2", "--key-count", "100", *SMALL)
    assert r.status == 1, r.err       # errors happened: not a clean run
    assert "ramp on" in r.out and "32 64 128 connections" in r.out
    assert "degrades at" in r.out and "Too many open connections" in r.out
    assert "server max_connections: 64" in r.out


def test_cli_set_json_counts_and_percentiles(memcached):
    server = memcached()
    r = run_cli("probe", "memcached", server.address, "-c", "4", "-e", "300", "--flush",
                "--json", *SMALL)
    assert r.status == 0, r.err
    doc = json.loads(r.out)
    assert doc["status"] == "completed" and doc["ops_total"] == 1200 and doc["flushed"]
    lat = doc["ops"]["set"]["latency"]
    assert set(lat["percentiles_ns"]) == {"p50", "p90", "p99", "p99.9"}
    assert lat["percentiles_ns"]["p50"] <= lat["percentiles_ns"]["p99"] <= lat["max_ns"]
    checks = {c["counter"]: c for c in doc["server"]["checks"]}
    assert checks["cmd_set"]["ok"] and checks["cmd_set"]["server_delta"] == 1200
    assert doc["server"]["deltas"]["cmd_flush"] == 1
    assert sum(s["ops"]["set"] for s in doc["samples"]) == 1200


def test_cli_text_report_and_real_binary(memcached):
    server = memcached()
    p = run_bin("probe", "memcached", server.address, "-c", "2", "-e", "200", "-t", "mix",
                *SMALL, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "status: completed" in p.stdout
    assert "p99 ms" in p.stdout and "check cmd_get" in p.stdout and "MISMATCH" not in p.stdout
    assert "server counter deltas:" in p.stdout


def test_cli_refused_port_is_one_clear_error():
    r = run_cli("probe", "memcached", f"127.0.0.1:{free_port()}", "-e", "5")
    assert r.status == 1
    assert "connection refused" in r.err and r.err.count("\n") == 1


def test_cli_flush_on_a_remote_server_needs_yes_without_a_tty():
    r = run_cli("probe", "memcached", "192.0.2.1:11211", "--flush")
    assert r.status == 2
    assert "--yes" in r.err and "192.0.2.1:11211" in r.err


def test_cli_rejects_both_bounds_and_bad_sizes():
    r = run_cli("probe", "memcached", "127.0.0.1", "-e", "5", "--duration", "1")
    assert r.status == 2
    r = run_cli("probe", "memcached", "127.0.0.1", "--key-size", "300")
    assert r.status == 2 and "key-size" in r.err
    r = run_cli("probe", "memcached", "[::1", "-e", "1")
    assert r.status == 2 and "bad server address" in r.err


def test_cli_ramp_beyond_the_hard_fd_limit_says_so_before_starting():
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    want = 50_000_000      # above fs.nr_open: even root cannot raise the hard limit this far
    r = run_cli("probe", "memcached", "127.0.0.1:1", "--ramp", "--max-connections", str(want))
    assert r.status == 2
    assert str(want + 64) in r.err and "RLIMIT_NOFILE" in r.err
    assert "ramp on" not in r.out          # nothing started
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[1] == hard


def test_ctrl_c_stops_at_once_with_partial_results(memcached):
    import os
    import signal
    import subprocess
    from conftest import inspector_bin
    server = memcached()
    proc = subprocess.Popen([inspector_bin(), "probe", "memcached", server.address, "-c", "4",
                             "--duration", "60", "--key-count", "100", *SMALL],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 15      # wait for the load to be running (busy CI boxes)
    while server.stats()["cmd_set"] < 1000 and time.monotonic() < deadline:
        time.sleep(0.05)
    start = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - start < 3
    assert proc.returncode == 130, err
    assert "status: stopped" in out and "partial" in out
    assert "check cmd_set" in out and "MISMATCH" not in out
    assert "stopped" in err
