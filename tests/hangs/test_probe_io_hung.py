"""`probe io` against a filesystem that stops answering, with the real binary in a private mount
namespace: a mount that never answers its stat (hung_mount.SilentFuse), and one that answers
the open and its first reads, then holds every read (stall_mount.StallingFuse).

Before, the set-up waited 15 s whatever -w said, and a read that never returned left the
probe's worker threads stuck: the command never ended (nor closed its output). Now the set-up
waits for -w (2 to 15 s), the run ends a few seconds after -w with its figures and the
workers that are stuck named (exit 3, a request failed mid-run), and what it left stuck in the
kernel (its engine's child) goes once the mount answers."""
from __future__ import annotations

import json

import pytest

from conftest import inspector_bin, require_root
from hung_mount import run_hung
from overlapped_runs import OverlappedRuns, selected_params
from slowness import slack
from stall_mount import run_stalled

pytestmark = [pytest.mark.root, pytest.mark.slow]
# the engine's child: stop HARD_GRACE after -w, cancel STOP_GRACE later, then the engine
# waits JOIN_TIMEOUT for its workers (0.5 + 0.5 + 2 s)
GRACES = 3.0
QUIET_START_AND_OUTPUT = 1.0      # the binary's start-up and its output, on a quiet machine
# reached early in the run however slow the machine (8000, 0.3 to 1 s of a 4 KiB O_DIRECT run
# quiet, were not reached within -w 1 at load 20)
READS_BEFORE_THE_STALL = 1000


@pytest.fixture(autouse=True)
def _root():
    require_root()


def _set_up_on_a_silent_mount(tmp_path) -> tuple[dict, object]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    return run_hung([str(mnt)], [inspector_bin(), "probe", "io", str(mnt), "-w", "3"]), mnt


def _stalled(tmp_path, *args: str, term_after: float | None = None) -> tuple[dict, object]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    return run_stalled(str(mnt), READS_BEFORE_THE_STALL,
                       [inspector_bin(), "probe", "io", str(mnt / "disk.img"), *args],
                       term_after=term_after), mnt


# Each run waits out -w and its graces on a mount that stopped answering: ~30 s of a worker
# one after another; two at a time, 1.5 s apart, the waits overlap (the bounds are from the
# moment each run reached the hang; three at once, with the FUSE server answering 1000 reads
# in Python for each, went past them at load 15-20)
@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    require_root()
    runs = OverlappedRuns(at_once=2, stagger=1.5)
    for _ in selected_params(request, "test_the_set_up_waits_for_w"):
        runs.start("set-up", _set_up_on_a_silent_mount, tmp_path_factory.mktemp("setup"))
    for params in selected_params(request, "test_reads_that_stop_answering_end_the_run_after_w"):
        runs.start(("-j", params["jobs"]), _stalled, tmp_path_factory.mktemp("stall"), "-w",
                   "2", "-j", params["jobs"])
    for _ in selected_params(request, "test_json_output_is_whole_when_reads_stop"):
        runs.start("json", _stalled, tmp_path_factory.mktemp("json"), "-w", "1", "--json")
    for _ in selected_params(request, "test_sigterm_ends_a_run_bounded_by_a_count_only"):
        runs.start("sigterm", _stalled, tmp_path_factory.mktemp("term"), "-c", "1000000",
                   term_after=1.0)
    yield runs
    runs.close()


def test_the_set_up_waits_for_w(runs):
    res, mnt = runs.result("set-up")
    print("probe io -w 3 ended after", res["seconds"], "s")
    assert not res["hung"] and res["held"] >= 1 and res["stuck_after_release"] == 0, res
    assert res["status"] == 2 and res["after_held"] <= 3 + slack(QUIET_START_AND_OUTPUT), res
    assert res["stderr"] == (f"inspector: {mnt}: no answer after 3 s (a hung filesystem or "
                             "device? look for processes in D state)\n")


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_reads_that_stop_answering_end_the_run_after_w(runs, jobs):
    res, mnt = runs.result(("-j", jobs))
    print(f"probe io -w 2 -j {jobs} ended after", res["seconds"], "s")
    assert not res["hung"], res
    assert res["answered"] == READS_BEFORE_THE_STALL and res["held"] >= 1, res
    assert res["after_held"] <= 2 + GRACES + slack(QUIET_START_AND_OUTPUT), res
    assert res["status"] == 1, res          # a request failed mid-run
    assert res["stderr"] == (f"inspector: {jobs} worker(s) still blocked in a request after "
                             "2 s (partial results kept)\n")
    assert f"--- {mnt}/disk.img (fuse inspector-test) ioping statistics ---" in res["stdout"]
    assert res["stdout"].rstrip().endswith(
        "O_DIRECT" if jobs == "1" else "worker 3: still blocked in a request (left out of the "
        "summary)"), res["stdout"]
    assert res["left_behind"] >= 1       # the engine's child, stuck in the kernel
    assert res["stuck_after_release"] == 0, res


def test_json_output_is_whole_when_reads_stop(runs):
    res, _ = runs.result("json")
    assert not res["hung"] and res["status"] == 1, res
    assert res["after_held"] <= 1 + GRACES + slack(QUIET_START_AND_OUTPUT), res
    doc = json.loads(res["stdout"])
    assert doc["summary"]["error"] == "1 worker(s) still blocked in a request after 2 s"
    assert doc["summary"]["workers"] == [] or doc["summary"]["workers"][0]["stuck"]
    assert res["stuck_after_release"] == 0, res


def test_sigterm_ends_a_run_bounded_by_a_count_only(runs):
    """-c alone has no time bound: a stuck run waits for a stop, and SIGTERM (1 s after
    the stall began) ends it on time (`timeout 5 inspector probe io ...` gets its figures)."""
    res, _ = runs.result("sigterm")
    print("SIGTERM to exit:", res["signal_to_exit"], "s")
    assert not res["hung"] and res["signal_to_exit"] <= GRACES + slack(1.0), res
    assert res["status"] == 1, res          # a request failed mid-run: it never came back
    assert "ioping statistics" in res["stdout"]
    assert res["stuck_after_release"] == 0, res
