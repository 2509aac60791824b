"""The TUI's overview lists the live findings as they begin and end: the installed binary in
tmux, a tmpfs filled for real beside it. (The findings panel is the overview's; the findings
come from inspector.tui.live.LiveProcess and the live rules.)"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import inspector_bin

pytestmark = pytest.mark.serial        # a TUI at 1 Hz, timed by what it shows


def test_the_overview_shows_a_filling_tmpfs_then_that_it_ended(tmux, tmp_path):
    mnt = tempfile.mkdtemp(prefix="ltf", dir="/tmp")      # short: the panel shows it whole
    # the critical time-to-full after 2 s of growth (the least the rule measures a slope
    # over) instead of the default 4 s: the same rule and panel, 2 s less waiting
    config = tmp_path / "config"
    (config / "inspector").mkdir(parents=True)
    (config / "inspector" / "inspector.toml").write_text("[live.fs]\ncrit_growth_span_s = 2.0\n")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", mnt], check=True,
                   timeout=20)
    writer = None
    try:
        tmux.run("new-session", "-d", "-s", "ui", "-x", "200", "-y", "50",
                 f"env -u COLUMNS -u LINES TEXTUAL_COLOR_SYSTEM=256 XDG_CONFIG_HOME={config} "
                 f"{inspector_bin()}")
        # the tmpfs fills while the TUI starts (16 MB/s: full after 16 s, a start takes 1-4 s):
        # its first samples already see the growth
        writer = subprocess.Popen(["sh", "-c", f"while :; do head -c 8388608 /dev/zero > "
                                   f"{mnt}/f.$(date +%s%N); sleep 0.5; done"])
        started = time.monotonic()
        tmux.wait(lambda s: "discovered" in s and "%util" in s, "the overview", timeout=30)
        screen = tmux.wait(lambda s: f"{mnt} full in" in s, "the time-to-full finding",
                           timeout=20)
        took = time.monotonic() - started
        assert "CRIT" in screen, screen
        writer.kill()
        writer.wait(5)
        writer = None
        subprocess.run(["sh", "-c", f"rm -f {mnt}/f.*"], timeout=20)
        # the finding ends, and stays listed as ended (the overview keeps them for the session)
        tmux.wait(lambda s: any(mnt in line and "ended" in line and "CRIT" not in line
                                for line in s.splitlines())
                  and not any(mnt in line and "CRIT" in line for line in s.splitlines()),
                  "the finding to end", timeout=20)
        tmux.keys("q")
        print(f"time-to-full shown {took:.1f} s after the writer started")
    finally:
        if writer is not None:
            writer.kill()
            writer.wait(5)
        subprocess.run(["umount", "-l", mnt], capture_output=True, timeout=20)
        shutil.rmtree(mnt, ignore_errors=True)
