"""Every command ends on time when a read never returns: a FUSE filesystem that holds every
request (hung_mount.SilentFuse) mounted where Inspector reads, in a private mount namespace,
with the real `inspector` binary. Each test checks the bound, the exit status, the line that
says what hung, that the command did hit the silent mount, and that nothing it left behind is
still stuck once the mount answers."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest

from conftest import fixture_root, inspector_bin, require_root
from hung_mount import run_hung
from overlapped_runs import OverlappedRuns, selected_params
from slowness import extra, slack

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _root():
    require_root()


def inspector(*args: str) -> list[str]:
    return [inspector_bin(), *args]


def ended_cleanly(res: dict) -> None:
    """It ended by itself, it did read the silent mount, and whatever it left stuck on it
    (a child of its, waiting in the kernel) went away once the mount answered."""
    assert not res["hung"], res
    assert res["held"] >= 1, f"the command never touched the silent mount: {res}"
    assert res["stuck_after_release"] == 0, res


# --------------------------------------------------------------------- timed alone
# first in the module: a plain run of this file gets to it before the runs below start
@pytest.mark.serial       # Nagios's bound to the tenth of a second: timed alone
def test_check_with_a_hung_collector_is_unknown_within_its_timeout():
    """/sys/block never answers: check said exit 1 after 8.3 s; now UNKNOWN (3), naming the
    section, within --timeout, with the other sections' findings below."""
    res = run_hung(["/sys/block"], inspector("check", "--timeout", "2"))
    print("check ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 3, res
    assert res["seconds"] <= 2.0 + extra(1.0), res
    first = res["stdout"].splitlines()[0]
    assert first.startswith("INSPECTOR UNKNOWN - storage: storage not collected: timed out "
                            "after "), first
    assert "[UNKNOWN] storage: storage not collected" in res["stdout"]


# --------------------------------------------------------------------- the hostname
HOSTNAME_CASES = [
    (["report"], 2.0, 0),
    (["export", "--prometheus"], 2.0, 0),
    (["snapshot", "-o", "{tmp}/snap.json"], 2.0, 0),
    (["capture", "-o", "{tmp}/cap.tar.gz"], 2.0, 0),
    (["check"], 3.0, None),
]


def _on_a_hung_hostname(tmp_path, argv: list[str], timeout: float) -> dict:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--timeout", f"{timeout:g}"]
    return run_hung(["/proc/sys/kernel/hostname"], inspector(*argv))


# Every command below but the serial one waits out a --timeout on a silent mount: one after
# another they were ~60 s of a worker; three at a time, a second apart, their waits overlap
# while their collections (CPU) seldom do: the bounds are from the moment each reached the
# hang, but its output comes after, and 13 at once on 2 cores slowed that past them.
@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    require_root()
    runs = OverlappedRuns(at_once=3, stagger=1.0)
    wanted = {name: selected_params(request, name) for name in (
        "test_a_hostname_that_never_answers", "test_record_with_a_hostname_that_never_answers",
        "test_a_hostname_in_a_root_tree_that_never_answers",
        "test_report_and_export_keep_the_sections_that_answered",
        "test_top_names_the_sources_that_do_not_answer",
        "test_top_ends_on_ctrl_c_while_a_source_hangs",
        "test_capture_lists_what_hung_and_the_replay_says_so",
        "test_probe_io_on_a_mount_that_never_answers",
        "test_snapshot_and_record_keep_their_sample_when_the_io_probe_hangs")}

    def tmp(name: str):
        return tmp_path_factory.mktemp(name)
    hostnames = wanted["test_a_hostname_that_never_answers"]
    for params in sorted(hostnames, key=lambda params: params["argv"] != ["check"]):
        argv, timeout = params["argv"], params["timeout"]
        directory = tmp("hostname")
        run = runs.run_alone if argv == ["check"] else runs.start   # its bound has its start
        run(("hostname", argv[0]), lambda d=directory, a=argv, t=timeout: (
            _on_a_hung_hostname(d, a, t), d))
    for _ in wanted["test_record_with_a_hostname_that_never_answers"]:
        runs.start("record hostname", _record_on_a_hung_hostname, tmp("record"))
    for _ in wanted["test_a_hostname_in_a_root_tree_that_never_answers"]:
        runs.start("root tree hostname", _root_tree_with_a_hung_hostname, tmp("root"))
    for _ in wanted["test_report_and_export_keep_the_sections_that_answered"]:
        runs.start("report sections", run_hung, ["/sys/block", "/sys/class/net"],
                   inspector("report", "--json", "--timeout", "2"))
        runs.start("export sections", run_hung, ["/sys/block"],
                   inspector("export", "--prometheus", "--timeout", "2"))
    for _ in wanted["test_top_names_the_sources_that_do_not_answer"]:
        runs.start("top text", run_hung, ["/proc/diskstats", "/proc/loadavg"],
                   inspector("top", "--interval", "0.5", "--count", "3"))
        runs.start("top json", run_hung, ["/proc/diskstats"],
                   inspector("top", "--interval", "0.3", "--count", "2", "--json"))
    for _ in wanted["test_top_ends_on_ctrl_c_while_a_source_hangs"]:
        runs.start("top ctrl-c", run_hung, ["/proc/diskstats"],
                   inspector("top", "--interval", "0.5"),
                   signal_after=1.0, signal_from="output")   # Ctrl-C once it shows a block
    for _ in wanted["test_capture_lists_what_hung_and_the_replay_says_so"]:
        out = tmp("capture") / "cap.tar.gz"
        runs.start("capture", lambda o=out: (run_hung(
            ["/sys/block", "/proc/diskstats"],
            inspector("capture", "--timeout", "2", "-o", str(o))), o))
    for _ in wanted["test_probe_io_on_a_mount_that_never_answers"]:
        runs.start("probe io", _probe_io_on_a_silent_mount, tmp("probe"))
    for _ in wanted["test_snapshot_and_record_keep_their_sample_when_the_io_probe_hangs"]:
        runs.start("snapshot io probe", _snapshot_with_a_hung_io_probe, tmp("snapshot"))
        runs.start("record io probe", _record_with_a_hung_io_probe, tmp("record-probe"))
    yield runs
    runs.close()


@pytest.mark.parametrize("argv, timeout, status", HOSTNAME_CASES)
def test_a_hostname_that_never_answers(runs, argv, timeout, status):
    """/proc/sys/kernel/hostname was read before any timeout: these commands hung forever.
    Now the read is bounded like a collector and the name comes from uname (the same kernel
    field)."""
    res, tmp_path = runs.result(("hostname", argv[0]))
    print(argv[0], "ended after", res["seconds"], "s")
    ended_cleanly(res)
    if argv[0] == "check":     # the whole check within --timeout (its start-up aside), and
        assert res["seconds"] <= timeout + extra(1.0), res        # this host's verdict
        assert res["stdout"].startswith("INSPECTOR ") and res["status"] in (0, 1, 2), res
        return
    assert res["status"] == status, res
    assert res["after_held"] <= timeout + slack(1.0), res
    if argv[0] == "report":
        assert f"Inspector report  {os.uname().nodename}" in res["stdout"], res["stdout"][:300]
    elif argv[0] == "export":
        assert 'inspector_section_up{section="storage"} 1' in res["stdout"], res["stdout"]
    elif argv[0] == "snapshot":
        snap = json.loads((tmp_path / "snap.json").read_text())
        assert snap["report"]["host"]["hostname"] == os.uname().nodename
    else:
        assert (tmp_path / "cap.tar.gz").stat().st_size > 1000


def _record_on_a_hung_hostname(tmp_path) -> tuple[dict, object]:
    db = tmp_path / "h.sqlite"
    return run_hung(["/proc/sys/kernel/hostname"],
                    inspector("record", "--once", "--timeout", "2", "--db", str(db))), db


def test_record_with_a_hostname_that_never_answers(runs):
    """record's --timeout bounds the hostname read (the default, 15 s, is the same path: it
    cost the suite 15 s a run)."""
    res, db = runs.result("record hostname")
    print("record ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and "sample 1: worst" in res["stderr"], res
    assert res["after_held"] <= 2 + slack(1.5), res
    with sqlite3.connect(db) as con:
        hosts = [row[0] for row in con.execute("select host from checks")]
    assert hosts == [os.uname().nodename]


def _root_tree_with_a_hung_hostname(tmp_path) -> dict:
    root = tmp_path / "root"
    shutil.copytree(fixture_root("storage-raid1-faulty"), root, symlinks=True)
    hostname = root / "proc/sys/kernel/hostname"
    hostname.parent.mkdir(parents=True, exist_ok=True)
    hostname.write_text("faulty\n")
    return run_hung([str(hostname)], inspector("report", "--root", str(root), "--json",
                                               "--timeout", "1.5"))


def test_a_hostname_in_a_root_tree_that_never_answers(runs):
    """A --root tree without a uname record: the hostname is unknown and says why."""
    res = runs.result("root tree hostname")
    print("report --root ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 1.5 + slack(1.0), res
    doc = json.loads(res["stdout"])
    assert doc["host"]["hostname"] == {"unknown": "timed out after 1.5 s"}
    assert not any(f["code"].endswith(".not_collected") for f in doc["findings"])
    assert any(f["code"] == "md.degraded" for f in doc["findings"])   # the report stands


# --------------------------------------------------------------------- collectors
def test_report_and_export_keep_the_sections_that_answered(runs):
    res = runs.result("report sections")
    print("report ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 2 + slack(1.0), res
    sections = json.loads(res["stdout"])["sections"]
    assert sections["storage"] == {"unknown": "timed out after 2 s"}
    assert sections["net"] == {"unknown": "timed out after 2 s"}
    assert "unknown" not in sections["cpu"] and "unknown" not in sections["dns"]

    res = runs.result("export sections")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 2 + slack(1.0), res
    assert 'inspector_section_up{section="storage"} 0' in res["stdout"]
    assert 'inspector_section_up{section="cpu"} 1' in res["stdout"]


# --------------------------------------------------------------------- live samplers
def test_top_names_the_sources_that_do_not_answer(runs):
    """/proc/diskstats and /proc/loadavg (what lxcfs serves in containers) never answer: top
    hung; now each block has the other panels and says which source timed out, and --count
    still ends it."""
    res = runs.result("top text")
    print("top --count 3 ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 1.0 + slack(2.5), res   # 2 intervals
    blocks = res["stdout"].strip().split("\n\n")
    assert len(blocks) == 3, res["stdout"]
    for block in blocks:
        assert "\nCPU " in block and "\nNIC " in block, block
        assert "Devices: unknown (/proc/diskstats timed out" in block, block
        assert "not answering: /proc/diskstats (timed out" in block, block
        assert "not answering: /proc/loadavg (timed out" in block, block

    res = runs.result("top json")
    ended_cleanly(res)
    lines = [json.loads(line) for line in res["stdout"].splitlines()]
    assert len(lines) == 2 and all("/proc/diskstats" in d["timed_out"] for d in lines)
    assert all(d["cpu"].get("overall") for d in lines)


def test_top_ends_on_ctrl_c_while_a_source_hangs(runs):
    res = runs.result("top ctrl-c")
    print("top ended", res["signal_to_exit"], "s after Ctrl-C")
    ended_cleanly(res)
    assert res["status"] == 0, res
    assert res["signal_to_exit"] <= slack(1.0), res
    assert "not answering: /proc/diskstats" in res["stdout"]


def test_capture_lists_what_hung_and_the_replay_says_so(runs):
    res, out = runs.result("capture")
    print("capture ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 2 + slack(2.0), res
    assert "warning: storage not collected (timed out after 2 s)" in res["stderr"], res
    assert "warning: live /proc/diskstats not collected (timed out after" in res["stderr"]
    from conftest import run_bin
    replay = run_bin("report", "--root", str(out), "--json")
    assert json.loads(replay.stdout)["sections"]["storage"] == {
        "unknown": "not collected when captured: timed out after 2 s"}
    top = run_bin("top", "--root", str(out))
    assert top.returncode == 0, top.stderr
    assert "/proc/diskstats not collected when captured: timed out after" in top.stdout


# --------------------------------------------------------------------- probes
def _probe_io_on_a_silent_mount(tmp_path) -> tuple[dict, object]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    return run_hung([str(mnt)], inspector("probe", "io", str(mnt), "-w", "1")), mnt


def test_probe_io_on_a_mount_that_never_answers(runs):
    """The set-up (stat, open, test file) hung forever; now it fails with one line after
    its set-up timeout: -w, at least 2 s (test_probe_io_hung.py: -w 3, and reads that stop)."""
    res, mnt = runs.result("probe io")
    print("probe io ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 2, res
    assert res["after_held"] <= 2 + slack(1.0), res
    assert res["stderr"].strip() == (f"inspector: {mnt}: no answer after 2 s (a hung "
                                     "filesystem or device? look for processes in D state)")


def _snapshot_with_a_hung_io_probe(tmp_path) -> tuple[dict, object, object]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    snap = tmp_path / "snap.json"
    return run_hung([str(mnt)], inspector("snapshot", "--probe", f"io:{mnt}",
                                          "--probe-seconds", "1", "-o", str(snap))), mnt, snap


def _record_with_a_hung_io_probe(tmp_path) -> tuple[dict, object, object]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    db = tmp_path / "h.sqlite"
    return run_hung([str(mnt)], inspector("record", "--once", "--probe", f"io:{mnt}",
                                          "--probe-seconds", "1", "--db", str(db))), mnt, db


def test_snapshot_and_record_keep_their_sample_when_the_io_probe_hangs(runs):
    """The probe is a failed run: its set-up gives up after 2 s (--probe-seconds 1, at least
    2 s), within the run's own bound (1 s + 3 s); the report and the other figures are kept."""
    res, mnt, snap = runs.result("snapshot io probe")
    print("snapshot ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 4 + slack(1.5), res
    assert "1 probe runs (1 failed)" in res["stderr"], res
    doc = json.loads(snap.read_text())
    hung = (f"{mnt}: no answer after 2 s (a hung filesystem or device? look for processes "
            "in D state)")
    assert doc["probes"][0]["error"] == hung
    assert "unknown" not in doc["report"]["sections"]["storage"]

    res, mnt, db = runs.result("record io probe")
    hung = (f"{mnt}: no answer after 2 s (a hung filesystem or device? look for processes "
            "in D state)")
    print("record ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 4 + slack(1.5), res
    assert f"(failed: io:{mnt})" in res["stderr"], res
    with sqlite3.connect(db) as con:
        errors = [row[0] for row in con.execute("select error from probe_runs")]
        checks = con.execute("select count(*) from checks").fetchone()[0]
    assert errors == [hung] and checks == 1
