"""`inspector` where no TUI can be drawn: stdout a pipe, or TERM=dumb on a terminal. The real
binary prints the report (plain text, no escape sequences) and says why in one stderr line.
NO_COLOR turns the TUI monochrome."""
from __future__ import annotations

import os
import pty
import select
import subprocess
import time

from conftest import fixture_root, inspector_bin
from inspector.roots.host import HostRoot
from inspector.tui.app import InspectorApp

ROOT = str(fixture_root("flash-mixed"))


def test_a_pipe_gets_the_report_and_one_line_on_stderr():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run([inspector_bin(), "--root", ROOT], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Findings" in proc.stdout and "flash-mixed-01" in proc.stdout
    assert "\x1b" not in proc.stdout                  # no TUI frames, no colours in the pipe
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "stdout is not a terminal" in lines[0] and "report" in lines[0]


def test_term_dumb_on_a_terminal_gets_the_report():
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "dumb"}
    env.pop("COLUMNS", None)
    proc = subprocess.Popen([inspector_bin(), "--root", ROOT], stdin=slave, stdout=slave,
                            stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:        # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=10) == 0
    text = out.decode("utf-8", "replace")
    assert "TERM=dumb" in text and "Findings" in text
    assert "\x1b[?1049h" not in text                  # never switched to the TUI's screen


def test_no_color_makes_the_tui_monochrome(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = InspectorApp(HostRoot(ROOT), sampler=False)
    assert app.no_color
    assert any(type(f).__name__ in ("Monochrome", "NoColor") for f in app._filters)
    monkeypatch.delenv("NO_COLOR")
    assert not InspectorApp(HostRoot(ROOT), sampler=False).no_color
