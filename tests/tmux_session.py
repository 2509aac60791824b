"""The real binary in a tmux session of its own socket: start it, read the screen, send keys,
resize, wait for what a user would wait to see. The `tmux` fixture gives each test its own
server (a socket named by the worker's pid and a count), killed after the test."""
from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import time

import pytest

from conftest import inspector_bin

_sessions = itertools.count()


class Tmux:
    def __init__(self, socket: str):
        self.socket = socket

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, timeout=10).stdout

    def start(self, args: str, width: int = 120, height: int = 40) -> None:
        self.run("kill-session", "-t", "ui")
        self.run("new-session", "-d", "-s", "ui", "-x", str(width), "-y", str(height),
                 f"env -u COLUMNS -u LINES TEXTUAL_COLOR_SYSTEM=256 {inspector_bin()} {args}")

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "ui")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "ui", *keys)

    def resize(self, width: int, height: int) -> None:
        self.run("resize-window", "-t", "ui", "-x", str(width), "-y", str(height))

    def wait(self, predicate, what: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if predicate(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{text}")
            time.sleep(0.1)


@pytest.fixture
def tmux():
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (make test installs it)")
    t = Tmux(f"inspector-test-{os.getpid()}-{next(_sessions)}")
    yield t
    import psutil
    started = []
    for pid in t.run("list-panes", "-a", "-F", "#{pane_pid}").split():
        try:
            pane = psutil.Process(int(pid))
            started += [pane, *pane.children(recursive=True)]
        except psutil.Error:
            pass
    t.run("kill-server")
    # what did not go with its terminal must not spin on into the next tests
    _, alive = psutil.wait_procs(started, timeout=3)
    for proc in alive:
        print(f"tmux teardown: pid {proc.pid} outlived its terminal; killed")
        proc.kill()
