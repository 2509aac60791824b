"""QA defects in `inspector probe memcached` output, against a real memcached and a server
that answers without counters."""
from __future__ import annotations

import json
import re
import socket
import threading

import pytest

from conftest import run_cli
from memcached_server import memcached  # noqa: F401 (pytest fixture)

SMALL = ["--key-size", "10-30", "--value-size", "10-300"]


def test_summary_line_says_how_many_connections_were_turned_away(memcached):
    # memcached -c 40 turns most of 100 connections away: the headline read "set load on 100
    # connections", as if all of them had carried load
    server = memcached("-c", "40")
    r = run_cli("probe", "memcached", "-c", "100", "-e", "20", *SMALL, server.address)
    assert r.status == 1, r.err
    line = next(l for l in r.out.splitlines() if l.startswith("summary:"))
    m = re.search(r"set load on 100 connections \((\d+) failed\):", line)
    assert m, line
    rejected = int(m.group(1))
    assert 50 <= rejected < 100
    # the error list names the error once, not "label: the same text again"
    listed = [l for l in r.out.splitlines() if "Too many open connections" in l
              and not l.lstrip().startswith(("status", "summary"))]
    assert listed and all(l.count("Too many open connections") == 1 for l in listed), listed
    status = next(l for l in r.out.splitlines() if l.lstrip().startswith("status:"))
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
                except socket.timeout:
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


def test_a_huge_execute_number_does_not_build_a_key_per_request(memcached):
    # -e 10000000 used to mean 10 M keys built in memory before the deadline was watched:
    # 34 s and gigabytes for "--deadline 1". The default key count now stops at 100000.
    import os
    import subprocess
    import time
    from conftest import inspector_bin
    server = memcached()
    start = time.monotonic()
    proc = subprocess.Popen([inspector_bin(), "probe", "memcached", "-c", "2", "-e", "10000000",
                             "--deadline", "1", *SMALL, "--json", server.address],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        out = proc.stdout.read()          # bounded: the probe ends at its deadline
        _, _, usage = os.wait4(proc.pid, 0)   # this child's own peak RSS
    finally:
        if proc.returncode is None and proc.poll() is None:
            proc.kill()
            proc.wait()
    took = time.monotonic() - start
    doc = json.loads(out)
    assert doc["status"] == "deadline" and doc["key_count"] == 100_000
    assert doc["ops_total"] > 0
    assert took < 5, took
    assert usage.ru_maxrss < 300_000, usage.ru_maxrss   # KB

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
    from conftest import inspector_bin, signal_after
    server = memcached()
    for workers in ("1", "2"):
        status, out, err, _ = signal_after(
            [inspector_bin(), "probe", "memcached", "-c", "4", "--workers", workers, "--duration",
             "20", *SMALL, "--json", server.address], 1.5, signal.SIGTERM)
        assert status == 128 + signal.SIGTERM, err
        doc = json.loads(out)
        assert doc["status"] == "stopped" and doc["ops_total"] > 0
        assert doc["connections_failed"] == 0, (workers, doc["connections_failed"])


def _big_get_load(server, **kw):
    from inspector.probes.memcached import MemcachedLoad
    from inspector.probes.mc_workload import SizeRange
    return MemcachedLoad(host=server.host, port=server.port, concurrency=2, test="get",
                         duration_s=5, key_count=300_000, key_size=SizeRange(20, 20),
                         value_size=SizeRange(4000, 4000), **kw)


def test_stop_during_the_preload_ends_it_at_once(memcached):
    # Ctrl-C while a get test stored its keys waited for the whole preload (seconds; up to
    # 2 s + 1 s per 5000 keys), then reported the run as never started
    import asyncio
    import time
    import uvloop
    from inspector.probes.memcached import MemcachedProbe
    server = memcached("-m", "32")
    probe = MemcachedProbe(_big_get_load(server))
    stopped_at = []

    async def main():
        async def stopper():
            while probe._preload is None or probe._preload.stored < 1000:
                await asyncio.sleep(0.005)
            stopped_at.append(time.monotonic())
            probe.stop()
        task = asyncio.ensure_future(stopper())
        async for _ in probe:
            pass
        task.cancel()
    uvloop.run(main())
    took = time.monotonic() - stopped_at[0]
    s = probe.summary
    assert took < 0.5, f"ended {took:.2f} s after stop()"
    assert s.status == "stopped" and s.preload.error == "stopped by the user"
    assert 1000 <= s.preload.stored < 300_000


def test_the_preload_keeps_to_the_deadline(memcached):
    # the preload waited up to 2 s + 1 s per 5000 keys (62 s here) whatever --deadline said
    import time
    import uvloop
    from inspector.probes.memcached import MemcachedProbe
    server = memcached("-m", "32")
    probe = MemcachedProbe(_big_get_load(server, deadline_s=0.6))

    async def main():
        async for _ in probe:
            pass
    start = time.monotonic()
    uvloop.run(main())
    took = time.monotonic() - start
    s = probe.summary
    assert took < 1.2, took
    assert s.status == "deadline"
    assert s.preload.error == "preload: timed out" and s.preload.stored < 300_000


def test_the_preload_does_not_hold_every_value_at_once(memcached):
    # 300000 keys of 4000-byte values: the preload built every set request first (1.3 GB
    # peak RSS); a window at a time it stays near the workload's own size (~120 MB)
    import os
    import subprocess
    from conftest import inspector_bin
    server = memcached("-m", "32")
    proc = subprocess.Popen([inspector_bin(), "probe", "memcached", "-t", "get", "--key-count",
                             "300000", "--key-size", "20", "--value-size", "4000", "-c", "2",
                             "--duration", "0.2", "--json", server.address],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        out = proc.stdout.read()
        _, _, usage = os.wait4(proc.pid, 0)
    finally:
        if proc.returncode is None and proc.poll() is None:
            proc.kill()
            proc.wait()
    doc = json.loads(out)
    assert doc["preload"]["stored"] == 300_000
    assert usage.ru_maxrss < 400_000, usage.ru_maxrss     # KB


def test_ramp_preload_keeps_to_the_deadline(memcached):
    # the ramp's preload ignored --deadline too (2 s + 1 s per 5000 keys)
    import time
    import uvloop
    from inspector.probes.mc_ramp import MemcachedRamp, RampConfig
    from inspector.probes.mc_workload import SizeRange
    server = memcached("-m", "32")
    cfg = RampConfig(server.host, server.port, start=2, max_connections=4, step_s=0.2,
                     test="get", key_count=300_000, key_size=SizeRange(20, 20),
                     value_size=SizeRange(4000, 4000), deadline_s=0.6)
    start = time.monotonic()
    summary = uvloop.run(MemcachedRamp(cfg).run())
    took = time.monotonic() - start
    assert took < 1.2, took
    assert summary.status in ("deadline", "failed") and summary.steps == []
