"""Shared parts of the recording tests: a loop device, a veth pair between two private network
namespaces, a recorder started as the real binary, and waiting for what it committed."""
from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from conftest import inspector_bin, require_root


@contextlib.contextmanager
def loop_device(directory: Path, size: int = 64 << 20):
    """A loop device over a sparse file in `directory`; yields its path (/dev/loopN)."""
    require_root()
    backing = directory / "backing.img"
    with open(backing, "wb") as f:
        f.truncate(size)
    # direct IO to the backing file: requests take the time of the disk under it
    dev = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(backing)],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


@contextlib.contextmanager
def veth_namespaces():
    """Two network namespaces joined by a veth pair: `va` (10.77.0.1) in the first, `vb`
    (10.77.0.2) in the second. The host's own namespace is never touched (other tests list
    its NICs). Yields the two namespace names."""
    require_root()
    tag = f"insprec{os.getpid()}"
    a, b = f"{tag}a", f"{tag}b"
    run = lambda *argv: subprocess.run(argv, check=True, capture_output=True, text=True)  # noqa: E731
    run("ip", "netns", "add", a)
    try:
        run("ip", "netns", "add", b)
        try:
            run("ip", "-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb",
                "netns", b)
            for ns, dev, addr in ((a, "va", "10.77.0.1/24"), (b, "vb", "10.77.0.2/24")):
                run("ip", "-n", ns, "addr", "add", addr, "dev", dev)
                run("ip", "-n", ns, "link", "set", dev, "up")
                run("ip", "-n", ns, "link", "set", "lo", "up")
            yield a, b
        finally:
            subprocess.run(["ip", "netns", "del", b], check=False)
    finally:
        subprocess.run(["ip", "netns", "del", a], check=False)


# a paced UDP sender: `rate` datagrams of `size` bytes per second to HOST:PORT, until killed
SENDER = """
import socket, sys, time
host, port, rate, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
payload = b"x" * size
start, sent = time.monotonic(), 0
while True:
    due = int((time.monotonic() - start) * rate)
    while sent < due:
        try:
            s.sendto(payload, (host, port))
        except OSError:
            pass
        sent += 1
    time.sleep(0.002)
"""


def udp_sender(netns: str, host: str, rate: int, size: int, port: int = 9) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-c", SENDER, host,
                             str(port), str(rate), str(size)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_recorder(db: str, *extra: str, netns: str | None = None,
                   every: str = "1s") -> subprocess.Popen:
    argv = [inspector_bin(), "record", "--samples", "--sample-every", every, "--every", "1h",
            "--db", db, *extra]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def committed(db: str) -> list[tuple[int, float]]:
    """(id, end time) of the intervals committed so far, read as another process would."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.OperationalError:
        return []
    try:
        return conn.execute("SELECT id, ts FROM sample_intervals ORDER BY id").fetchall()
    except sqlite3.OperationalError:      # not created yet
        return []
    finally:
        conn.close()


def wait_for_intervals(db: str, count: int, proc: subprocess.Popen | None = None,
                       timeout: float = 30) -> list[tuple[int, float]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = committed(db)
        if len(rows) >= count:
            return rows
        if proc is not None and proc.poll() is not None:
            assert proc.stderr is not None, "start_recorder pipes the recorder's stderr"
            raise AssertionError(f"recorder exited {proc.returncode}: {proc.stderr.read()}")
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} intervals after {timeout} s: {committed(db)}")


def stop(proc: subprocess.Popen, timeout: float = 15) -> tuple[int, str]:
    """SIGTERM (the recorder finishes its interval), its status and stderr."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err
