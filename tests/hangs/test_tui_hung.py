"""The real TUI in tmux with FUSE mounts that never answer (hung_mount.SilentFuse) over
/proc/diskstats, /proc/meminfo, the hostname and /sys/block, in a private mount namespace.

Before, the overview said "collecting..." for good, every live panel "live sampling timed out"
without naming a source, and q never ended the process (its threads stuck in the mounts kept
it from exiting). Now the panels name the source that does not answer, the findings name the
section (storage) within a few seconds, and q, Ctrl-C and SIGTERM end it; whatever it left
stuck in the mounts (its reader children) is gone once the mounts answer."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import inspector_bin, require_root
from hung_mount import run_hung
from overlapped_runs import OverlappedRuns, selected_params
from slowness import slack

pytestmark = [pytest.mark.root, pytest.mark.slow]

DRIVER = Path(__file__).resolve().parent / "tui_in_tmux.py"
MOUNTS = ["/proc/diskstats", "/proc/meminfo", "/proc/sys/kernel/hostname", "/sys/block"]
SHOWN = ["Disks", "/proc/diskstats timed out", "mem  /proc/meminfo timed out",
         "storage not collected: no answer yet after 3 s (waiting up to 15 s)"]


@pytest.fixture(autouse=True)
def _root():
    require_root()
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (make test installs it)")


ENDINGS = [
    ("q", 2.0, 0),
    ("C-c", 2.0, 0),
    # 128 + 15; lifecycle.terminate_children does not wait for the reader children stuck in
    # the mounts, which cannot die until they answer (it waited twice: 3.2 s; now 0.2-0.3 s)
    ("SIGTERM", 1.0, 143),
    # 128 + 1: the terminal is gone, the TUI leaves without Textual's exit
    ("SIGHUP", 1.0, 129),
]


def _tui_on_silent_mounts(end: str) -> tuple[dict, float]:
    shown_by = 3.0 + slack(3.0)       # the status line's 3 s, and the TUI's start-up
    return run_hung(MOUNTS, [sys.executable, str(DRIVER), *[a for text in SHOWN
                                                           for a in ("--expect", text)],
                             "--end", end, "--wait", f"{shown_by + 6:.1f}", "--",
                             inspector_bin()], cap=60), shown_by


# Each TUI sits through the status line's 3 s before it is ended: two at a time, 2 s apart,
# one's start-up overlaps the other's wait (a TUI costs CPU while it draws: not more at once)
@pytest.fixture(scope="module")
def runs(request):
    require_root()
    runs = OverlappedRuns(at_once=2, stagger=2.0)
    for params in selected_params(request, "test_the_tui_names_what_hangs_and_ends_on_time"):
        runs.start(params["end"], _tui_on_silent_mounts, params["end"])
    yield runs
    runs.close()


@pytest.mark.parametrize("end, bound, status", ENDINGS)
def test_the_tui_names_what_hangs_and_ends_on_time(runs, end, bound, status):
    res, shown_by = runs.result(end)
    assert not res["hung"] and res["status"] == 0, res
    tui = json.loads(res["stdout"])
    screen = tui.pop("screen")
    print(end, tui, "\n" + screen)
    assert tui["started"], res
    assert tui["shown_after"] is not None and tui["shown_after"] <= shown_by, screen
    assert f"host  {os.uname().nodename}" in screen          # uname, as `report` does
    assert "(no answer yet from storage)" in screen          # the status line
    assert tui["exit_after"] is not None and tui["exit_after"] <= slack(bound), tui
    assert tui["status"] == status, tui
    assert res["held"] >= 3, res        # it did read the mounts
    assert res["stuck_after_release"] == 0, res
