"""`fleet DIR` on a filesystem that stops answering: a held directory listing (a silent FUSE
directory as DIR) or a held snapshot read (a host's snapshot is a link to a FUSE file whose
reads are held) hung the command until killed. Now the listing gives up in one line, a held
snapshot is its host's UNREAD row while the other hosts are read, and Ctrl-C ends it."""
from __future__ import annotations

import signal

import pytest

from conftest import fixture_root, inspector_bin, require_root, run_bin
from hung_mount import run_hung
from inspector.roots.input_files import READ_STALL_S
from slowness import slack
from stall_mount import run_stalled

pytestmark = [pytest.mark.root, pytest.mark.slow]
SLACK = 6.0        # start-up and output beside two busy loops; a hang is the 60 s cap


@pytest.fixture(autouse=True)
def _root():
    require_root()


def test_a_fleet_directory_whose_listing_never_answers(tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    res = run_hung([str(fleet)], [inspector_bin(), "fleet", str(fleet)], cap=60)
    assert not res["hung"] and res["held"] >= 1 and res["stuck_after_release"] == 0, res
    assert res["status"] == 2 and res["after_held"] <= READ_STALL_S + SLACK, res
    assert res["stderr"] == (f"inspector: {fleet}: no progress reading it for "
                             f"{READ_STALL_S:g} s (a hung filesystem? look for processes in "
                             "D state)\n"), res["stderr"]


def test_a_held_snapshot_is_its_hosts_row_and_the_others_are_read(tmp_path):
    fleet, mount = tmp_path / "fleet", tmp_path / "mnt"
    mount.mkdir()
    for host in ("good", "stuck", "zlater"):
        (fleet / host).mkdir(parents=True)
    made = run_bin("snapshot", "--root", str(fixture_root("xen-pv-guest")), "-o",
                   str(fleet / "good" / "s.json"), timeout=120)
    assert made.returncode == 0, made.stderr
    (fleet / "zlater" / "s.json").write_bytes((fleet / "good" / "s.json").read_bytes())
    (fleet / "stuck" / "s.json").symlink_to(mount / "disk.img")   # its reads are held
    res = run_stalled(str(mount), 0, [inspector_bin(), "fleet", str(fleet)], cap=60)
    assert not res["hung"] and res["stuck_after_release"] == 0, res
    assert res["after_held"] <= READ_STALL_S + SLACK, res
    rows = {line.split()[1]: line for line in res["stdout"].splitlines()
            if line.split()[:1] in (["UNREAD"], ["WARN"], ["OK"], ["CRIT"])}
    assert rows["stuck"].startswith("UNREAD") and "no progress reading it" in rows["stuck"]
    assert rows["good"].startswith("WARN") and rows["zlater"].startswith("WARN"), res["stdout"]


def test_ctrl_c_ends_fleet_on_a_held_listing(tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    res = run_hung([str(fleet)], [inspector_bin(), "fleet", str(fleet)], signal_after=1.0,
                   signal_from="held", cap=60)         # 1 s after it reached the mount
    assert not res["hung"] and res["stuck_after_release"] == 0, res
    assert res["status"] in (130, -signal.SIGINT), res
    assert res["signal_to_exit"] <= slack(2.0), res
