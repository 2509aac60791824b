"""`--root DIR` on a filesystem that never answers: the directory itself on a silent FUSE mount
(hung_mount.SilentFuse), or only its inspector-sidecar.json. Opening the tree and reading the
sidecar happened in the command's own process, so `report --root DIR --timeout 2` hung until
killed (and `check` never printed its UNKNOWN line). Now they happen in a forked child under
the command's --timeout (at most 5 s), and the command says what did not answer."""
from __future__ import annotations

import re
import shutil

import pytest

from conftest import fixture_root, inspector_bin, require_root
from hung_mount import run_hung
from overlapped_runs import OverlappedRuns, selected_params
from slowness import extra, slack

pytestmark = [pytest.mark.root, pytest.mark.slow]

HINT = "(a hung filesystem? look for processes in D state)"


@pytest.fixture(autouse=True)
def _root():
    require_root()


def _capture_dir(tmp_path):
    """A root tree with a sidecar, as a capture unpacks."""
    root = tmp_path / "root"
    shutil.copytree(fixture_root("storage-raid1-faulty"), root, symlinks=True)
    (root / "inspector-sidecar.json").write_text('{"version": 1, "facts": {}}')
    return root


@pytest.fixture
def capture_dir(tmp_path):
    return _capture_dir(tmp_path)


def ended_cleanly(res: dict) -> None:
    assert not res["hung"], res
    assert res["held"] >= 1, f"the command never touched the silent mount: {res}"
    assert res["stuck_after_release"] == 0, res


# first in the module: a plain run of this file gets to it before the runs below start
@pytest.mark.serial       # Nagios's bound to the tenth of a second: timed alone
@pytest.mark.parametrize("hung", ["dir", "sidecar"])
def test_check_says_unknown_within_its_timeout(tmp_path, capture_dir, hung):
    """Nagios gets its UNKNOWN line (exit 3) within --timeout, saying what did not answer."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    sidecar = capture_dir / "inspector-sidecar.json"
    mount, root = (mnt, mnt) if hung == "dir" else (sidecar, capture_dir)
    res = run_hung([str(mount)], [inspector_bin(), "check", "--root", str(root), "--timeout",
                                  "2"], cap=30)
    print("check ended after", res["seconds"], "s:", res["stdout"].strip())
    ended_cleanly(res)
    assert res["status"] == 3, res
    assert res["seconds"] <= 2.0 + extra(1.0), res     # its start-up aside
    line = res["stdout"].strip()
    assert line.startswith(f"INSPECTOR UNKNOWN - --root {root}: no answer from {mount} "
                           "after "), line
    assert line.endswith(HINT), line


def _sidecar_never_answers(tmp_path, command: str) -> tuple[dict, object, object]:
    root = _capture_dir(tmp_path)
    sidecar = root / "inspector-sidecar.json"
    bounded = ["--timeout", "2"] if command == "report" else ["--count", "1"]
    return run_hung([str(sidecar)], [inspector_bin(), command, "--root", str(root), *bounded],
                    cap=30), root, sidecar


def _root_dir_never_answers(tmp_path) -> tuple[dict, object]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    return run_hung([str(mnt)], [inspector_bin(), "report", "--root", str(mnt), "--timeout",
                                 "2"], cap=30), mnt


def _capture_reads_stall(tmp_path) -> tuple[dict, object]:
    from stall_mount import run_stalled
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    capture = mnt / "disk.img"
    return run_stalled(str(mnt), 0, [inspector_bin(), "report", "--root", str(capture),
                                     "--timeout", "2"], cap=30), capture


# Each run waits out a bound of 2 to 5 s on a silent mount: three at a time, a second apart,
# the waits overlap (the bounds are from the moment each run reached the hang)
@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    require_root()
    runs = OverlappedRuns(at_once=3, stagger=1.0)
    for params in selected_params(request, "test_a_sidecar_that_never_answers"):
        runs.start(("sidecar", params["command"]), _sidecar_never_answers,
                   tmp_path_factory.mktemp("sidecar"), params["command"])
    for _ in selected_params(request, "test_a_root_directory_that_never_answers"):
        runs.start("root dir", _root_dir_never_answers, tmp_path_factory.mktemp("dir"))
    for _ in selected_params(request, "test_a_capture_whose_reads_stall"):
        runs.start("capture", _capture_reads_stall, tmp_path_factory.mktemp("capture"))
    yield runs
    runs.close()


@pytest.mark.parametrize("command", ["report", "top"])
def test_a_sidecar_that_never_answers(runs, command):
    res, capture_dir, sidecar = runs.result(("sidecar", command))
    print(command, "ended after", res["seconds"], "s:", res["stderr"].strip())
    ended_cleanly(res)
    assert res["status"] == 2, res
    # report: its --timeout; top has none: the fixed bound of 5 s. The sidecar's read gets
    # what is left of it after the survey of the tree (a moment; 0.1 s under load)
    bound = 2 if command == "report" else 5
    assert res["after_held"] <= bound + slack(1.0), res
    said = re.fullmatch(rf"inspector: --root {re.escape(str(capture_dir))}: no answer from "
                        rf"{re.escape(str(sidecar))} after (\d+(?:\.\d)?) s "
                        rf"{re.escape(HINT)}", res["stderr"].strip())
    assert said and bound - 1 < float(said[1]) <= bound, res["stderr"]
    assert res["stdout"] == ""


def test_a_root_directory_that_never_answers(runs):
    res, mnt = runs.result("root dir")
    print("report ended after", res["seconds"], "s:", res["stderr"].strip())
    ended_cleanly(res)
    assert res["status"] == 2 and res["after_held"] <= 2 + slack(1.0), res
    assert res["stderr"].strip() == (f"inspector: --root {mnt}: no answer from {mnt} after "
                                     f"2 s {HINT}")


def test_a_capture_whose_reads_stall(runs):
    """A capture on a mount that answers its stat and its open, then holds every read (a dying
    NFS server): the unpacking ran in the command's own process, which slept in the kernel
    for good. Now a child unpacks, and the command gives up when it makes no progress."""
    res, capture = runs.result("capture")
    print("report ended after", res["seconds"], "s:", res["stderr"].strip())
    ended_cleanly(res)
    assert res["status"] == 2 and res["after_held"] <= 2 + slack(2.0), res
    assert res["stderr"].strip() == (f"inspector: --root {capture}: no progress reading "
                                     f"{capture} for 2 s {HINT}")
