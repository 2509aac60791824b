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
from overlapped_runs import OverlappedRuns, selected_params
from slowness import slack
from stall_mount import run_stalled

pytestmark = [pytest.mark.root, pytest.mark.slow]
SLACK = 6.0        # start-up and output beside two busy loops; a hang is the 60 s cap


@pytest.fixture(autouse=True)
def _root():
    require_root()


def _listing_never_answers(tmp_path, **ending) -> tuple[dict, object]:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    return run_hung([str(fleet)], [inspector_bin(), "fleet", str(fleet)], cap=60,
                    **ending), fleet


def _one_snapshot_held(tmp_path) -> dict:
    fleet, mount = tmp_path / "fleet", tmp_path / "mnt"
    mount.mkdir()
    for host in ("good", "stuck", "zlater"):
        (fleet / host).mkdir(parents=True)
    made = run_bin("snapshot", "--root", str(fixture_root("xen-pv-guest")), "-o",
                   str(fleet / "good" / "s.json"), timeout=120)
    assert made.returncode == 0, made.stderr
    (fleet / "zlater" / "s.json").write_bytes((fleet / "good" / "s.json").read_bytes())
    (fleet / "stuck" / "s.json").symlink_to(mount / "disk.img")   # its reads are held
    return run_stalled(str(mount), 0, [inspector_bin(), "fleet", str(fleet)], cap=60)


# Each run waits out READ_STALL_S on a silent mount: started together, a second apart, the
# waits overlap (the bounds are from the moment each run reached the hang)
@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    require_root()
    runs = OverlappedRuns(at_once=3, stagger=1.0)
    for _ in selected_params(request, "test_a_fleet_directory_whose_listing_never_answers"):
        runs.start("listing", _listing_never_answers, tmp_path_factory.mktemp("listing"))
    for _ in selected_params(request,
                             "test_a_held_snapshot_is_its_hosts_row_and_the_others_are_read"):
        runs.start("snapshot", _one_snapshot_held, tmp_path_factory.mktemp("snapshot"))
    for _ in selected_params(request, "test_ctrl_c_ends_fleet_on_a_held_listing"):
        runs.start("ctrl-c", _listing_never_answers, tmp_path_factory.mktemp("ctrl-c"),
                   signal_after=1.0, signal_from="held")     # 1 s after it reached the mount
    yield runs
    runs.close()


def test_a_fleet_directory_whose_listing_never_answers(runs):
    res, fleet = runs.result("listing")
    assert not res["hung"] and res["held"] >= 1 and res["stuck_after_release"] == 0, res
    assert res["status"] == 2 and res["after_held"] <= READ_STALL_S + SLACK, res
    assert res["stderr"] == (f"inspector: {fleet}: no progress reading it for "
                             f"{READ_STALL_S:g} s (a hung filesystem? look for processes in "
                             "D state)\n"), res["stderr"]


def test_a_held_snapshot_is_its_hosts_row_and_the_others_are_read(runs):
    res = runs.result("snapshot")
    assert not res["hung"] and res["stuck_after_release"] == 0, res
    assert res["after_held"] <= READ_STALL_S + SLACK, res
    rows = {line.split()[1]: line for line in res["stdout"].splitlines()
            if line.split()[:1] in (["UNREAD"], ["WARN"], ["OK"], ["CRIT"])}
    assert rows["stuck"].startswith("UNREAD") and "no progress reading it" in rows["stuck"]
    assert rows["good"].startswith("WARN") and rows["zlater"].startswith("WARN"), res["stdout"]


def test_ctrl_c_ends_fleet_on_a_held_listing(runs):
    res, _ = runs.result("ctrl-c")
    assert not res["hung"] and res["stuck_after_release"] == 0, res
    assert res["status"] in (130, -signal.SIGINT), res
    assert res["signal_to_exit"] <= slack(2.0), res
