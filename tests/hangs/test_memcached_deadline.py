"""`probe memcached --deadline` is a hard bound on the whole command, against a server that
accepts connections and never answers (stats, preload and load all wait on it)."""
from __future__ import annotations

import socket
import subprocess
import threading
import time

import pytest

from conftest import inspector_bin
from slowness import slack

pytestmark = pytest.mark.slow
# the run ends within ~20 ms of the deadline; the command adds its start-up (imports, uvloop)
# and its exit: 0.15-0.35 s on a quiet 2-core VM, scaled by the machine's slowness
SLACK = 0.6


@pytest.fixture
def silent_server():
    """host:port of a listener that accepts and never reads nor writes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in accepted:
        conn.close()
    listener.close()


@pytest.mark.parametrize("args, deadline", [
    (["--deadline", "2"], 2.0),                           # was 3.3 s
    (["--deadline", "2", "-t", "get"], 2.0),              # stats, then the preload wait
    (["--deadline", "2", "--workers", "2"], 2.0),         # worker processes' last reports
    (["--ramp", "--deadline", "3", "--step-seconds", "1"], 3.0),      # was 8.5 s for 5
    (["--ramp", "--deadline", "2", "--connect-timeout", "1"], 2.0),   # a step's drain
])
def test_the_deadline_bounds_the_whole_command(silent_server, args, deadline):
    start = time.monotonic()
    proc = subprocess.run([inspector_bin(), "probe", "memcached", silent_server, *args],
                          capture_output=True, text=True, timeout=deadline + 30)
    took = time.monotonic() - start
    print(" ".join(args), f"took {took:.2f} s")
    assert took <= deadline + slack(SLACK), (took, proc.stdout, proc.stderr)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    # the figures so far are printed, and the one line says how the run ended
    if "--ramp" in args:
        assert proc.stdout.startswith("ramp on "), proc.stdout
        assert "inspector: probe memcached ramp " in proc.stderr, proc.stderr
    else:
        assert "\nsummary: memcached " in proc.stdout, proc.stdout
        assert f"inspector: probe memcached {silent_server}: " in proc.stderr, proc.stderr
    assert "server counters: unknown (stats unavailable: timed out)" in proc.stdout \
        or "--ramp" in args, proc.stdout
