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


# --------------------------------------------------------------------- the hostname
@pytest.mark.parametrize("argv, timeout, status", [
    (["report"], 2.0, 0),
    (["export", "--prometheus"], 2.0, 0),
    (["snapshot", "-o", "{tmp}/snap.json"], 2.0, 0),
    (["capture", "-o", "{tmp}/cap.tar.gz"], 2.0, 0),
    (["check"], 3.0, None),
])
def test_a_hostname_that_never_answers(tmp_path, argv, timeout, status):
    """/proc/sys/kernel/hostname was read before any timeout: these commands hung forever.
    Now the read is bounded like a collector and the name comes from uname (the same kernel
    field)."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--timeout", f"{timeout:g}"]
    res = run_hung(["/proc/sys/kernel/hostname"], inspector(*argv))
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


def test_record_with_a_hostname_that_never_answers(tmp_path):
    """record's --timeout bounds the hostname read (the default, 15 s, is the same path: it
    cost the suite 15 s a run)."""
    db = tmp_path / "h.sqlite"
    res = run_hung(["/proc/sys/kernel/hostname"],
                   inspector("record", "--once", "--timeout", "2", "--db", str(db)))
    print("record ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and "sample 1: worst" in res["stderr"], res
    assert res["after_held"] <= 2 + slack(1.5), res
    with sqlite3.connect(db) as con:
        hosts = [row[0] for row in con.execute("select host from checks")]
    assert hosts == [os.uname().nodename]


def test_a_hostname_in_a_root_tree_that_never_answers(tmp_path):
    """A --root tree without a uname record: the hostname is unknown and says why."""
    root = tmp_path / "root"
    shutil.copytree(fixture_root("storage-raid1-faulty"), root, symlinks=True)
    hostname = root / "proc/sys/kernel/hostname"
    hostname.parent.mkdir(parents=True, exist_ok=True)
    hostname.write_text("faulty\n")
    res = run_hung([str(hostname)], inspector("report", "--root", str(root), "--json",
                                              "--timeout", "1.5"))
    print("report --root ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 1.5 + slack(1.0), res
    doc = json.loads(res["stdout"])
    assert doc["host"]["hostname"] == {"unknown": "timed out after 1.5 s"}
    assert not any(f["code"].endswith(".not_collected") for f in doc["findings"])
    assert any(f["code"] == "md.degraded" for f in doc["findings"])   # the report stands


# --------------------------------------------------------------------- collectors
@pytest.mark.serial       # Nagios's bound to the tenth of a second: timed alone
def test_check_with_a_hung_collector_is_unknown_within_its_timeout():
    """/sys/block never answers: check said exit 1 after 8.3 s; now UNKNOWN (3), naming the
    section, within --timeout, with the other sections' findings below."""
    res = run_hung(["/sys/block"], inspector("check", "--timeout", "4"))
    print("check ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 3, res
    assert res["seconds"] <= 4.0 + extra(1.0), res
    first = res["stdout"].splitlines()[0]
    assert first.startswith("INSPECTOR UNKNOWN - storage: storage not collected: timed out "
                            "after "), first
    assert "[UNKNOWN] storage: storage not collected" in res["stdout"]


def test_report_and_export_keep_the_sections_that_answered():
    res = run_hung(["/sys/block", "/sys/class/net"],
                   inspector("report", "--json", "--timeout", "2"))
    print("report ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 2 + slack(1.0), res
    sections = json.loads(res["stdout"])["sections"]
    assert sections["storage"] == {"unknown": "timed out after 2 s"}
    assert sections["net"] == {"unknown": "timed out after 2 s"}
    assert "unknown" not in sections["cpu"] and "unknown" not in sections["dns"]

    res = run_hung(["/sys/block"], inspector("export", "--prometheus", "--timeout", "2"))
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 2 + slack(1.0), res
    assert 'inspector_section_up{section="storage"} 0' in res["stdout"]
    assert 'inspector_section_up{section="cpu"} 1' in res["stdout"]


# --------------------------------------------------------------------- live samplers
def test_top_names_the_sources_that_do_not_answer():
    """/proc/diskstats and /proc/loadavg (what lxcfs serves in containers) never answer: top
    hung; now each block has the other panels and says which source timed out, and --count
    still ends it."""
    res = run_hung(["/proc/diskstats", "/proc/loadavg"],
                   inspector("top", "--interval", "0.5", "--count", "3"))
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

    res = run_hung(["/proc/diskstats"], inspector("top", "--interval", "0.3", "--count", "2",
                                                  "--json"))
    ended_cleanly(res)
    lines = [json.loads(line) for line in res["stdout"].splitlines()]
    assert len(lines) == 2 and all("/proc/diskstats" in d["timed_out"] for d in lines)
    assert all(d["cpu"].get("overall") for d in lines)


def test_top_ends_on_ctrl_c_while_a_source_hangs():
    res = run_hung(["/proc/diskstats"], inspector("top", "--interval", "0.5"),
                   signal_after=1.0, signal_from="output")     # Ctrl-C once it shows a block
    print("top ended", res["signal_to_exit"], "s after Ctrl-C")
    ended_cleanly(res)
    assert res["status"] == 0, res
    assert res["signal_to_exit"] <= slack(1.0), res
    assert "not answering: /proc/diskstats" in res["stdout"]


def test_capture_lists_what_hung_and_the_replay_says_so(tmp_path):
    out = tmp_path / "cap.tar.gz"
    res = run_hung(["/sys/block", "/proc/diskstats"],
                   inspector("capture", "--timeout", "2", "-o", str(out)))
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
def test_probe_io_on_a_mount_that_never_answers(tmp_path):
    """The set-up (stat, open, test file) hung forever; now it fails with one line after
    its set-up timeout: -w, at least 2 s (test_probe_io_hung.py: -w 3, and reads that stop)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    res = run_hung([str(mnt)], inspector("probe", "io", str(mnt), "-w", "1"))
    print("probe io ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 2, res
    assert res["after_held"] <= 2 + slack(1.0), res
    assert res["stderr"].strip() == (f"inspector: {mnt}: no answer after 2 s (a hung "
                                     "filesystem or device? look for processes in D state)")


def test_snapshot_and_record_keep_their_sample_when_the_io_probe_hangs(tmp_path):
    """The probe is a failed run: its set-up gives up after 2 s (--probe-seconds 1, at least
    2 s), within the run's own bound (1 s + 3 s); the report and the other figures are kept."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    snap = tmp_path / "snap.json"
    res = run_hung([str(mnt)], inspector("snapshot", "--probe", f"io:{mnt}", "--probe-seconds",
                                         "1", "-o", str(snap)))
    print("snapshot ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 4 + slack(1.5), res
    assert "1 probe runs (1 failed)" in res["stderr"], res
    doc = json.loads(snap.read_text())
    hung = (f"{mnt}: no answer after 2 s (a hung filesystem or device? look for processes "
            "in D state)")
    assert doc["probes"][0]["error"] == hung
    assert "unknown" not in doc["report"]["sections"]["storage"]

    db = tmp_path / "h.sqlite"
    res = run_hung([str(mnt)], inspector("record", "--once", "--probe", f"io:{mnt}",
                                         "--probe-seconds", "1", "--db", str(db)))
    print("record ended after", res["seconds"], "s")
    ended_cleanly(res)
    assert res["status"] == 0 and res["after_held"] <= 4 + slack(1.5), res
    assert f"(failed: io:{mnt})" in res["stderr"], res
    with sqlite3.connect(db) as con:
        errors = [row[0] for row in con.execute("select error from probe_runs")]
        checks = con.execute("select count(*) from checks").fetchone()[0]
    assert errors == [hung] and checks == 1
