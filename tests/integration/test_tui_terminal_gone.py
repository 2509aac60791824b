"""The TUI leaves when its terminal goes away even if no SIGHUP reaches it: the kernel signals
the session leader only, and a login shell that ignores HUP (or `nohup`) never passes it on.
Before, the TUI then spun on the dead terminal at ~20 % of a core for good."""
from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import termios
import time

import psutil

from conftest import fixture_root, inspector_bin
from slowness import slack


def _drain(master: int, until: bytes, timeout: float) -> bytes:
    """Read the terminal's output until `until` shows (the TUI blocks on a full pty)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while until not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 0.1)[0]:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
    return seen


def test_the_tui_leaves_when_its_terminal_hangs_up_without_a_signal():
    root = fixture_root("storage-raid1-faulty")
    pid, master = pty.fork()
    if pid == 0:            # the session leader: a shell that ignores HUP, the TUI its child
        os.environ.update(TERM="xterm-256color")
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)
        os.execvp("bash", ["bash", "-c", f'trap "" HUP; {inspector_bin()} --root {root}; :'])
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    shell = psutil.Process(pid)
    tui: psutil.Process | None = None
    try:
        screen = _drain(master, b"Overview", slack(20.0))
        assert b"Overview" in screen, screen[-500:]
        tui = next(p for p in shell.children() if "inspector" in " ".join(p.cmdline()))
        os.close(master)                    # the terminal hangs up: only the shell hears it
        master = -1
        gone = time.monotonic()
        tui.wait(slack(6.0))                # a check a second, then the SIGHUP path (<= 4 s)
        print(f"the TUI left {time.monotonic() - gone:.2f} s after the hangup")
        assert shell.children() == [] or all(
            c.status() == psutil.STATUS_ZOMBIE for c in shell.children())
    finally:
        if master >= 0:
            os.close(master)
        for proc in ([tui] if tui else []) + [shell]:
            try:
                proc.kill()
            except psutil.Error:
                pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
