"""`inspector probe memcached` and the connection ramp against a real memcached."""
from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import signal
import socket
import subprocess
import threading
import time

import psutil
import pytest
import uvloop

from conftest import inspector_bin, run_bin, run_cli
from inspector.probes.memcached.probe import MemcachedLoad, MemcachedProbe
from inspector.probes.memcached.ramp import MemcachedRamp, RampConfig
from inspector.probes.memcached.stats import read_stats
from inspector.probes.memcached.workload import SizeRange
from memcached_server import free_port

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


# Against a real memcached on loopback: IPv6 targets, unresolvable names and closed ports, one
# ramp verdict, snapshot runs, per-op errors, and signals that must not leave worker processes
# behind.

# memcached's smallest item size limit: values over ~1 KiB get "SERVER_ERROR object too large"
TINY_ITEMS = ("-I", "1k", "-o", "slab_chunk_max=512")


# --- IPv6 --------------------------------------------------------------------------------
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
    assert stats.error is None and stats.values is not None
    assert stats.values["pid"] == server.proc.pid
    r = run_cli("probe", "memcached", f"[::1]:{server.port}", "--ramp", "--max-connections", "8",
                "--start-connections", "4", "--step-seconds", "0.2", *SMALL)
    assert r.status == 0, r.err
    assert f"ramp on [::1]:{server.port}: 4 8 connections" in r.out
    assert r.out.count("conns: opened") == 2 and "ramp completed" in r.out
    assert ("degrades at" in r.out) != ("no knee" in r.out)    # one verdict, either way


# --- names that do not resolve, ports that refuse -----------------------------------------
def test_unresolvable_host_fails_fast_in_one_line():
    start = time.monotonic()
    p = run_bin("probe", "memcached", "nonexistent.invalid:11211", "-e", "10", timeout=30)
    assert p.returncode == 2
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("inspector: cannot resolve nonexistent.invalid: ")
    assert "Future exception" not in p.stderr and "timed out" not in p.stderr
    assert p.stdout == ""
    assert time.monotonic() - start < 15


def test_a_name_idna_cannot_encode_is_one_line():
    # a label over 63 characters: getaddrinfo raises UnicodeError, which has no strerror (the
    # run failed with "AttributeError: 'UnicodeError' object has no attribute 'strerror'", and
    # --flush's loopback check was an internal error)
    host = "a" * 64 + ".example"
    for extra in ((), ("--flush",)):
        r = run_cli("probe", "memcached", f"{host}:11211", "-e", "10", *extra)
        assert r.status == 2 and r.out == "" and r.err.count("\n") == 1, (extra, r.out, r.err)
        assert r.err.startswith(f"inspector: cannot resolve {host}: "), (extra, r.err)


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


# --- one ramp verdict -------------------------------------------------------------------
def test_ramp_prints_one_verdict_when_errors_are_not_rejections(memcached):
    server = memcached(*TINY_ITEMS)
    r = run_cli("probe", "memcached", server.address, "--ramp", "--start-connections", "4",
                "--max-connections", "8", "--step-seconds", "0.2", "--key-count", "200",
                "--key-size", "10-20", "--value-size", "10-2000")
    assert "degrades at 4 connections: errors start at 4 connections (server_error" in r.out
    assert "no knee" not in r.out


# --- snapshot / record probe runs --------------------------------------------------------
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


# --- per-op errors ----------------------------------------------------------------------
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


# The output's summary and status lines, a server that answers without counters, the bounds of
# the options, and the preload's memory.
def test_summary_line_says_how_many_connections_were_turned_away(memcached):
    # memcached -c 40 turns most of 100 connections away: the headline read "set load on 100
    # connections", as if all of them had carried load
    server = memcached("-c", "40")
    r = run_cli("probe", "memcached", "-c", "100", "-e", "20", *SMALL, server.address)
    assert r.status == 1, r.err
    line = next(text for text in r.out.splitlines() if text.startswith("summary:"))
    m = re.search(r"set load on 100 connections \((\d+) failed\):", line)
    assert m, line
    rejected = int(m.group(1))
    assert 50 <= rejected < 100
    # the error list names the error once, not "label: the same text again"
    listed = [line for line in r.out.splitlines() if "Too many open connections" in line
              and not line.lstrip().startswith(("status", "summary"))]
    assert listed and all(line.count("Too many open connections") == 1 for line in listed), listed
    status = next(line for line in r.out.splitlines() if line.lstrip().startswith("status:"))
    assert status.count("Too many open connections") == 1, status


def test_summary_line_of_a_clean_run_has_no_failed_count(memcached):
    server = memcached()
    r = run_cli("probe", "memcached", "-c", "1", "-e", "20", *SMALL, "--json", server.address)
    assert r.status == 0, r.err
    assert json.loads(r.out)["connections_failed"] == 0
    r = run_cli("probe", "memcached", "-c", "1", "-e", "20", *SMALL, server.address)
    assert "set load on 1 connection: 20 requests" in r.out, r.out


def test_ramp_status_line_does_not_repeat_itself(memcached):
    server = memcached()
    r = run_cli("probe", "memcached", "--ramp", "--start-connections", "2",
                "--max-connections", "4", "--step-seconds", "0.2", *SMALL, server.address)
    assert r.status == 0, r.err
    assert "ramp completed\n" in r.out and "completed: completed" not in r.out, r.out


@pytest.fixture
def counterless_server():
    """Answers STORED to every set and `stats` with no counter at all."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.1)
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        conn.settimeout(0.2)
        with conn:
            buf = b""
            while not stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"\r\n" in buf:
                    line, _, rest = buf.partition(b"\r\n")
                    if line.startswith(b"stats"):
                        conn.sendall(b"STAT pid 1\r\nEND\r\n")
                        buf = rest
                    elif line.startswith(b"set "):
                        if rest.count(b"\r\n") < 1:
                            break             # the value is not all here yet
                        buf = rest.partition(b"\r\n")[2]
                        conn.sendall(b"STORED\r\n")
                    else:
                        buf = rest

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    thread.join(2)
    sock.close()


def test_stats_without_counters_say_unknown_not_an_empty_list(counterless_server):
    r = run_cli("probe", "memcached", "-c", "2", "-e", "10", *SMALL, counterless_server)
    assert "server counter deltas: \n" not in r.out + "\n", r.out
    assert "  server counters: unknown (stats reported none of them)" in r.out, r.out


def test_root_is_refused_like_probe_io(memcached):
    # --root (a capture) used to be ignored: the load went to the live server all the same
    server = memcached()
    before = server.stats()["cmd_set"]
    r = run_cli("probe", "memcached", "--root", "/", "-c", "1", "-e", "5", server.address)
    assert r.status == 2
    assert "cannot run on --root" in r.err
    assert server.stats()["cmd_set"] == before


@pytest.mark.serial
def test_a_huge_execute_number_does_not_build_a_key_per_request(memcached):
    # -e 10000000 used to mean 10 M keys built in memory before the deadline was watched:
    # 34 s and gigabytes for "--deadline 1". The default key count now stops at 100000.
    import subprocess
    import time

    from conftest import inspector_bin, peak_rss_kb, popen_measuring_peak_rss
    from slowness import slack
    server = memcached()
    # long enough for the first requests after start-up and the keys' building, which a
    # loaded machine slows: a deadline before the first request proves nothing
    deadline = slack(1.0)
    start = time.monotonic()
    proc = popen_measuring_peak_rss([inspector_bin(), "probe", "memcached", "-c", "2", "-e",
                                     "10000000", "--deadline", f"{deadline:.2f}", *SMALL,
                                     "--json", server.address], stdout=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=30)   # bounded: the probe ends at its deadline
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    took = time.monotonic() - start
    doc = json.loads(out)
    assert doc["status"] == "deadline" and doc["key_count"] == 100_000
    assert doc["ops_total"] > 0
    assert took < deadline + slack(4), took
    assert peak_rss_kb(err) < 300_000, err   # KB


def test_key_count_beyond_the_bound_is_a_usage_error(memcached):
    server = memcached()
    for extra in ([], ["--ramp"]):
        r = run_cli("probe", "memcached", "--key-count", "2000000", "-c", "1", *extra,
                    server.address)
        assert r.status == 2 and "key count must be within 1..1000000" in r.err, r.err


def test_workers_are_bounded_by_the_cores(memcached):
    # each worker is a Python process (~37 MB): --workers 40 -c 40 started 40 of them
    # (1.5 GB) on a 2-core host; --workers 4096 would have started 4096
    import os
    server = memcached()
    n = max(2, os.cpu_count() or 1) + 1
    r = run_cli("probe", "memcached", "-c", str(n), "--workers", str(n), "--duration", "0.3",
                *SMALL, server.address)
    assert r.status == 2, r.out
    assert f"--workers {n}: at most {n - 1} on this host" in r.err
    assert server.stats()["cmd_set"] == 0       # no load was started


def test_stopping_the_run_does_not_count_its_connections_as_failed(memcached):
    # Ctrl-C / SIGTERM close every connection: the summary read "load on 4 connections (4
    # failed)" after a clean run that was merely stopped
    import signal
    import subprocess
    import time

    from conftest import inspector_bin
    server = memcached()
    for workers in ("1", "2"):
        before = server.stats()["cmd_set"]
        proc = subprocess.Popen(
            [inspector_bin(), "probe", "memcached", "-c", "4", "--workers", workers, "--duration",
             "20", *SMALL, "--json", server.address], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            # stopped mid-run, so once the server has taken some of its sets (a fixed 1.5 s
            # was sometimes before the command had its handlers, on a loaded box)
            while server.stats()["cmd_set"] < before + 100 and proc.poll() is None:
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        status = proc.returncode
        assert status == 128 + signal.SIGTERM, err
        doc = json.loads(out)
        assert doc["status"] == "stopped" and doc["ops_total"] > 0
        assert doc["connections_failed"] == 0, (workers, doc["connections_failed"])


def test_the_preload_does_not_hold_every_value_at_once(memcached):
    # 100000 keys of 4000-byte values: building every set request first holds 400 MB of them
    # (300000 keys peaked at 1.3 GB); a window at a time the command peaks near 55 MB (100 MB
    # at 300000 keys). A third of the keys keeps both sides of the bound apart, for a third
    # of the CPU
    import subprocess

    from conftest import inspector_bin, peak_rss_kb, popen_measuring_peak_rss
    server = memcached("-m", "32")
    proc = popen_measuring_peak_rss([inspector_bin(), "probe", "memcached", "-t", "get",
                                     "--key-count", "100000", "--key-size", "20",
                                     "--value-size", "4000", "-c", "2", "--duration", "0.2",
                                     "--json", server.address], stdout=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    doc = json.loads(out)
    assert doc["preload"]["stored"] == 100_000
    assert peak_rss_kb(err) < 200_000, err     # KB
