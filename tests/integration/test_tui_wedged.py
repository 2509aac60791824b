"""The real TUI in tmux whose event loop never comes back (issue 20): its terminal going away,
or SIGTERM, still ends it on time. A screen spinning on its own Resize events once kept a TUI
at 100 % CPU for 13 minutes after its tmux server was killed: the exit signals were handled by
the event loop, which never got to them.

The wedge is made the way it happened, a handler of the loop that never returns: a
sitecustomize (on PYTHONPATH, the real binary otherwise untouched) turns the help key into an
endless Python loop."""
from __future__ import annotations

import os
import signal
import textwrap
import time

import psutil
import pytest

from conftest import inspector_bin
from inspector.tui.app import EXIT_WATCHDOG_S
from slowness import factor, slack

# its exit is timed, and the 4 s watchdog must not be starved by other tests
pytestmark = pytest.mark.serial

WEDGE = """
    import pathlib
    import inspector.tui.app as app_module

    def wedged(self):
        pathlib.Path({mark!r}).write_text("spinning")
        while True:
            pass

    app_module.InspectorApp.action_help = wedged
"""


def wedged_tui(tmux, tmp_path) -> psutil.Process:
    hook = tmp_path / "hook"
    hook.mkdir()
    mark = tmp_path / "spinning"
    (hook / "sitecustomize.py").write_text(textwrap.dedent(WEDGE.format(mark=str(mark))))
    # a shell keeps the TUI's exit status in a file (tmux's remain-on-exit status once read
    # empty in a full run); env execs the TUI, the shell's one child
    status = tmp_path / "status"
    tmux.run("new-session", "-d", "-s", "ui", "-x", "120", "-y", "40",
             f"sh -c 'env -u COLUMNS -u LINES PYTHONPATH={hook} {inspector_bin()}; "
             f"echo $? > {status}'")
    shell = psutil.Process(int(tmux.run("list-panes", "-t", "ui", "-F", "#{pane_pid}").strip()))
    deadline = time.monotonic() + 10
    while not shell.children():
        assert time.monotonic() < deadline, "the TUI did not start"
        time.sleep(0.05)
    tui = shell.children()[0]
    tmux.wait(lambda s: "1 Overview" in s, "the overview")
    tmux.keys("?")
    deadline = time.monotonic() + 10
    while not mark.exists():
        assert time.monotonic() < deadline, "the help key did not reach the wedge"
        time.sleep(0.05)
    # it spins, as the stuck TUI did (an idle one uses 1-2 %): a spinning process gets less of
    # a CPU on a loaded machine (40 % beside another test here)
    assert tui.cpu_percent(0.5) > 50 / factor()
    return tui


def exit_after(proc: psutil.Process, limit: float) -> float | None:
    """Seconds until the process has exited (a zombie tmux has not reaped yet counts)."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.02)
    else:
        return None
    return round(time.monotonic() - started, 2)


def test_a_wedged_tui_leaves_when_its_terminal_goes(tmux, tmp_path):
    tui = wedged_tui(tmux, tmp_path)
    tmux.run("kill-session", "-t", "ui")      # SIGHUP from the kernel, as ssh dropping does
    took = exit_after(tui, 10)
    print(f"wedged TUI gone {took} s after its terminal")
    # at once, not by the exit watchdog: the bound grows with the machine's slowness but
    # stays under the watchdog
    assert took is not None and took <= min(slack(1.0), EXIT_WATCHDOG_S - 0.5), took


def test_a_wedged_tui_leaves_on_sigterm_by_its_watchdog(tmux, tmp_path):
    tui = wedged_tui(tmux, tmp_path)
    os.kill(tui.pid, signal.SIGTERM)
    took = exit_after(tui, EXIT_WATCHDOG_S + 10)
    print(f"wedged TUI gone {took} s after SIGTERM")
    assert took is not None and took <= EXIT_WATCHDOG_S + slack(1.5), took
    status_file = tmp_path / "status"
    deadline = time.monotonic() + 5    # the shell writes it once it has reaped the TUI
    while not (status_file.exists() and status_file.read_text().strip()):
        assert time.monotonic() < deadline, "no exit status from the shell"
        time.sleep(0.05)
    assert status_file.read_text().strip() == str(128 + signal.SIGTERM)
