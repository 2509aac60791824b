"""Probe processes end with the process that started them, however it ends: a TUI killed with
SIGKILL or left through its exit watchdog's os._exit cannot stop its probe runs, and the
memcached probe's worker processes sit in sessions of their own, out of reach of the terminal's
SIGHUP. PR_SET_PDEATHSIG (inspector.children.parent_death) ends them: a run stops the CLI's way
(SIGTERM; before, an orphaned run went on to its end), a worker is killed (it also ends once it
reads the end of its socket to the probe, 0.15 s here; the signal does not wait for that)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from conftest import inspector_bin
from slowness import slack

# A parent that starts a probe run as the TUI does (inspector.probes.child.command), waits for
# it to start, prints its pid and then dies without a word.
PARENT = textwrap.dedent("""
    import os, subprocess, sys
    from inspector.probes.child import command
    from inspector.probes.request import ProbeRequest
    run = subprocess.Popen(command(ProbeRequest("memcached", sys.argv[1], duration=120)),
                           stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    first = run.stdout.readline()
    print(run.pid, first.decode().strip(), flush=True)
    os.kill(os.getpid(), 9)
""")


def gone_within(pids: list[int], timeout: float) -> float | None:
    """Seconds until none of `pids` runs any more (a zombie counts as gone), None if never."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if not any(_running(pid) for pid in pids):
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.serial
def test_a_probe_run_stops_when_its_parent_is_killed(memcached):
    server = memcached()
    parent = subprocess.run([sys.executable, "-c", PARENT, server.address], capture_output=True,
                            text=True, timeout=30)
    assert parent.returncode == -signal.SIGKILL, parent.stderr
    pid, started = parent.stdout.split(" ", 1)
    assert json.loads(started)["type"] == "started"
    took = gone_within([int(pid)], 30.0)
    print("the orphaned run ended after", took, "s")
    assert took is not None and took <= slack(2.0)


@pytest.mark.serial
def test_memcached_workers_die_with_their_probe(memcached):
    server = memcached()
    probe = subprocess.Popen([inspector_bin(), "probe", "memcached", server.address,
                              "--workers", "2", "-c", "4", "--duration", "120"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        workers: list[psutil.Process] = []
        while len(workers) < 2:
            assert time.monotonic() < deadline, "the workers did not start"
            workers = [c for c in psutil.Process(probe.pid).children()
                       if "inspector.probes.memcached.workers" in " ".join(c.cmdline())]
            time.sleep(0.05)
        assert all(os.getsid(w.pid) == w.pid for w in workers)   # sessions of their own
        probe.kill()                   # no chance to end its workers itself
        probe.wait(5)
        took = gone_within([w.pid for w in workers], 30.0)
        print("the orphaned workers ended after", took, "s")
        assert took is not None and took <= slack(1.0)
    finally:
        if probe.poll() is None:
            probe.kill()
            probe.wait(5)


# A child whose parent is gone before it asks for the parent-death signal: the kernel would
# never send it (the parent it has now, init or a subreaper, does not end), so end_with_parent
# sees the new parent pid and sends the signal itself.
LATE_CHILD = textwrap.dedent("""
    import os, signal, time
    from inspector.children.parent_death import end_with_parent
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)  # the test's pipes: run() returns at once
        os.dup2(null, 1)
        os.dup2(null, 2)
        time.sleep(0.5)                         # the parent exits meanwhile
        end_with_parent(parent, signal.SIGTERM)
        time.sleep(60)
        os._exit(0)
    print(pid, flush=True)
    os._exit(0)
""")


def test_a_child_orphaned_before_it_asks_still_ends():
    parent = subprocess.run([sys.executable, "-c", LATE_CHILD], capture_output=True, text=True,
                            timeout=30)
    assert parent.returncode == 0, parent.stderr
    took = gone_within([int(parent.stdout)], 30.0)
    print("the child orphaned before prctl ended after", took, "s")
    assert took is not None and took <= slack(5.0)
