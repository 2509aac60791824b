"""End to end: the installed `inspector` in a real terminal (tmux), driven by keys.

Opens the TUI, goes to Storage, starts an IO probe on a temp file from there (`p` opens the
probe form), sees the operation count grow on screen, quits with q, and checks that the process
and its probe threads are gone."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import psutil
import pytest

from conftest import inspector_bin

OPS = re.compile(r"#1\s+IO latency\s+\S+\s+running\s+(\d+)")


class Tmux:
    def __init__(self, socket: str):
        self.socket = socket

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, timeout=10).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "ui")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "ui", *keys)

    def wait(self, predicate, what: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if predicate(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{text}")
            time.sleep(0.1)


@pytest.fixture
def tmux(tmp_path):
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (make test installs it)")
    t = Tmux(f"inspector-test-{os.getpid()}")
    yield t
    t.run("kill-server")


def test_storage_to_io_probe_and_quit(tmux, tmp_path):
    target = tmp_path / "probe.bin"
    target.write_bytes(os.urandom(8 << 20))
    env_cmd = f"TEXTUAL_COLOR_SYSTEM=256 {inspector_bin()}"
    tmux.run("new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", env_cmd)
    tmux.run("set-option", "-t", "ui", "remain-on-exit", "on")
    pid = int(tmux.run("list-panes", "-t", "ui", "-F", "#{pane_pid}").strip())
    tmux.wait(lambda s: "1 Overview" in s and "host" in s, "the overview")

    tmux.keys("2")
    tmux.wait(lambda s: "p IO probe here" in s and "storage" in s, "the storage screen")
    tmux.keys("p")
    tmux.wait(lambda s: "Start" in s and "workers/connections" in s, "the probe form")
    time.sleep(0.3)  # the target field takes focus
    tmux.keys("C-u")
    tmux.keys("-l", str(target))
    tmux.wait(lambda s: "probe.bin" in s, "the typed target")
    tmux.keys("Enter")
    first = tmux.wait(lambda s: OPS.search(s) is not None, "the probe running")
    ops1 = int(OPS.search(first).group(1))
    later = tmux.wait(lambda s: OPS.search(s) is not None and int(OPS.search(s).group(1)) > ops1,
                      "the operation count to grow", timeout=10)
    # the live chart with its legend (the IO probe's intervals carry their median)
    assert "• p99" in later and "█ p50" in later

    tmux.keys("q")
    deadline = time.monotonic() + 10
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "inspector did not exit on q"
        time.sleep(0.1)
    # tmux notices the exit (and records its status) a moment after the process is gone
    deadline = time.monotonic() + 5
    while True:
        dead = tmux.run("list-panes", "-t", "ui", "-F", "#{pane_dead} #{pane_dead_status}").split()
        if len(dead) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert dead == ["1", "0"], dead   # exited, status 0
    leftovers = [p for p in psutil.process_iter(["cmdline"])
                 if p.info["cmdline"] and str(target) in " ".join(p.info["cmdline"])]
    assert leftovers == []
