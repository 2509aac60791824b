"""The real binary in a tmux session of its own socket: start it, read the screen, send keys,
resize, wait for what a user would wait to see. The `tmux` fixture gives each test its own
server (a socket named by the worker's pid and a count), killed after the test."""
from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator

import psutil
import pytest

from conftest import inspector_bin

_sessions = itertools.count()


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, timeout=10).stdout

    def start(self, args: str, width: int = 120, height: int = 40) -> None:
        """Run inspector with `args` in session "ui". A clean exit ends the session, as it
        would a user's; a failed one keeps the pane open with the exit status under what the
        program printed, so a test that times out shows why instead of an empty screen."""
        command = (f"env -u COLUMNS -u LINES TEXTUAL_COLOR_SYSTEM=256 {inspector_bin()} {args}; "
                   "status=$?; [ $status -eq 0 ] || { echo \"[inspector exited: status $status]\"; "
                   "sleep 600; }")
        self.run("kill-session", "-t", "ui")
        for _ in range(3):
            self.run("new-session", "-d", "-s", "ui", "-x", str(width), "-y", str(height),
                     command)
            if self.has_session():
                return
            time.sleep(0.2)     # a server that was exiting as its last session ended
        raise AssertionError(f"tmux could not start a session for: inspector {args}")

    def inspector(self) -> psutil.Process:
        """The psutil.Process of the inspector that start() ran (a child of the pane's shell)."""
        shell = psutil.Process(int(self.run("list-panes", "-t", "ui", "-F", "#{pane_pid}")))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for child in shell.children():
                if "sleep" not in child.name():
                    return child
            time.sleep(0.05)
        raise AssertionError("no inspector process under the tmux pane")

    def has_session(self) -> bool:
        return subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", "ui"],
                              capture_output=True, timeout=10).returncode == 0

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "ui")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "ui", *keys)

    def resize(self, width: int, height: int) -> None:
        self.run("resize-window", "-t", "ui", "-x", str(width), "-y", str(height))

    def wait(self, predicate: Callable[[str], object], what: str, timeout: float = 30.0) -> str:
        """The screen once `predicate(screen)` holds; fails naming `what` after `timeout` s."""
        deadline = time.monotonic() + timeout
        # 20 ms first, doubling up to 0.1 s: a key's answer is often drawn within tens of ms,
        # and each read is a tmux client of its own
        pause = 0.02
        while True:
            text = self.screen()
            if predicate(text):
                return text
            if time.monotonic() > deadline:
                if not self.has_session():
                    text = "(no tmux session: the program exited cleanly or never started)"
                raise AssertionError(f"timed out waiting for {what}; screen:\n{text}")
            time.sleep(pause)
            pause = min(0.1, pause * 2)


def _socket() -> str:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (make test installs it)")
    return f"inspector-test-{os.getpid()}-{next(_sessions)}"


def _shut_down(t: Tmux) -> None:
    started: list[psutil.Process] = []
    for pid in t.run("list-panes", "-a", "-F", "#{pane_pid}").split():
        try:
            pane = psutil.Process(int(pid))
            started += [pane, *pane.children(recursive=True)]
        except psutil.Error:
            pass
    t.run("kill-server")
    # what did not go with its terminal must not spin on into the next tests. A zombie has
    # gone: with its tmux server gone, pid 1 reaps it, here 1.5-1.8 s later
    deadline = time.monotonic() + 3
    alive = started
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if not _exited(p)]
        if alive:
            time.sleep(0.02)
    for proc in alive:
        print(f"tmux teardown: pid {proc.pid} outlived its terminal; killed")
        proc.kill()


def _exited(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    t = Tmux(_socket())
    yield t
    _shut_down(t)


@pytest.fixture
def tmux_servers() -> Iterator[Callable[[], Tmux]]:
    """Several terminals in one test (TUIs that start and run side by side): each call gives
    a tmux server of its own, all shut down after the test."""
    made: list[Tmux] = []

    def new() -> Tmux:
        made.append(Tmux(_socket()))
        return made[-1]
    yield new
    for t in made:
        _shut_down(t)
