"""Leaving when the terminal goes away: every descendant is ended, even one that ignores
SIGTERM and sits in its own session (as the memcached probe's worker processes do)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import psutil

SCRIPT = textwrap.dedent("""
    import subprocess, sys, time
    from inspector.tui.lifecycle import terminate_children
    stubborn = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"],
        start_new_session=True)
    plain = subprocess.Popen(["sleep", "60"])
    grandchild = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])

    def ready():        # the stubborn child ignores SIGTERM (15) and the shell has its sleep
        try:
            with open(f"/proc/{stubborn.pid}/status") as f:
                ignored = next(int(line.split()[1], 16) for line in f
                               if line.startswith("SigIgn:"))
            with open(f"/proc/{grandchild.pid}/task/{grandchild.pid}/children") as f:
                sleeps = f.read().split()
        except (OSError, StopIteration):
            return False
        return bool(ignored & (1 << 14)) and bool(sleeps)
    deadline = time.monotonic() + 15
    while not ready():
        assert time.monotonic() < deadline, "the children never got ready"
        time.sleep(0.01)
    print(stubborn.pid, plain.pid, grandchild.pid, flush=True)
    found = terminate_children(grace=0.5)
    print(len(found), flush=True)
""")


def test_terminate_children_ends_every_descendant():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=20, check=True).stdout.split()
    pids, found = [int(p) for p in out[:3]], int(out[3])
    assert found >= 4     # the three children and the shell's sleep
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
