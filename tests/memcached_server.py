"""A real memcached for tests: started on a free loopback port with given args, waited for,
killed at teardown. Also a plain socket server that accepts and never answers. Loaded as a
pytest plugin by tests/conftest.py:

    def test_x(memcached):
        server = memcached("-c", "64")     # -> MemcachedServer(host, port, proc)
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass

import pytest

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_listening(port: int, timeout: float = 5.0, host: str = HOST) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listening on {host}:{port} after {timeout} s")


@dataclass
class MemcachedServer:
    host: str
    port: int
    proc: subprocess.Popen

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def stats(self) -> dict[str, int]:
        """Raw `stats` over a socket (independent of the code under test)."""
        with socket.create_connection((self.host, self.port), timeout=2) as s:
            s.sendall(b"stats\r\n")
            data = b""
            while not data.endswith(b"END\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        out = {}
        for line in data.decode().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "STAT":
                try:
                    out[parts[1]] = int(parts[2])
                except ValueError:
                    pass
        return out


def start_memcached(*args: str, host: str = HOST) -> MemcachedServer:
    """`host` "::1" starts it on IPv6 loopback."""
    exe = shutil.which("memcached")
    if exe is None:
        pytest.fail("memcached is not installed (make test installs it)")
    port = free_port(host)
    argv = [exe, "-l", host, "-p", str(port), "-U", "0", *args]
    if os.geteuid() == 0:
        argv += ["-u", "nobody"]     # memcached refuses to run as root without -u
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, host=host)
    except RuntimeError:
        proc.kill()
        err = proc.communicate(timeout=5)[1].decode(errors="replace")
        raise RuntimeError(f"memcached did not start: {err.strip()}") from None
    return MemcachedServer(host, port, proc)


@pytest.fixture
def memcached():
    started: list[MemcachedServer] = []

    def start(*args: str, host: str = HOST) -> MemcachedServer:
        server = start_memcached(*args, host=host)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


@dataclass
class SilentServer:
    host: str
    port: int
    accepted: list


@pytest.fixture
def silent_server():
    """Accepts connections, reads nothing, answers nothing (a hung server)."""
    sock = socket.socket()
    sock.bind((HOST, 0))
    sock.listen(128)
    sock.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
                accepted.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield SilentServer(HOST, sock.getsockname()[1], accepted)
    stop.set()
    thread.join(timeout=2)
    for conn in accepted:
        conn.close()
    sock.close()
