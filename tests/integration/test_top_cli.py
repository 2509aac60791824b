"""`inspector top`: text blocks, JSON lines, a capture's single sample, errors, Ctrl-C, and a
real load seen on its device and attributed to its process."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import fixture_root, inspector_bin, require_root, run_bin, run_cli
from inspector.captures.capture import write_capture
from inspector.live import capture_sample
from inspector.roots.host import HostRoot
from slowness import slack

# The tests marked serial read this host's live disks (and compare their rates with fio's):
# alone, after the parallel part of `make test`. The others read fixture trees and time nothing


@pytest.mark.serial
def test_text_blocks_like_iostat_and_vmstat():
    res = run_cli("top", "--interval", "0.2", "--count", "2")
    assert res.status == 0, res.err
    blocks = res.out.strip().split("\n\n")
    assert len(blocks) == 2
    for block in blocks:
        lines = block.splitlines()
        # fixed-rate schedule: each interval is about 0.2 s (a late sample shortens the next)
        assert re.search(r"interval 0\.[12]\d s", lines[0]), lines[0]
        assert "load " in lines[0] and "cs/s " in lines[0]
        assert lines[1].split() == ["CPU", "%usr", "%nice", "%sys", "%iowait", "%irq", "%soft",
                                    "%steal", "%idle"]
        assert any(ln.startswith("all ") for ln in lines)
        assert any(ln.startswith("Device ") and "r_await" in ln and "%util" in ln for ln in lines)
        assert any(ln.startswith("eth0 ") for ln in lines)
        assert any(ln.startswith("D state") for ln in lines)
        assert any(ln.startswith("Top IO") for ln in lines)


@pytest.mark.serial
def test_all_shows_idle_devices_too():
    res = run_cli("top", "--interval", "0.1", "--count", "1", "--all")
    assert res.status == 0
    names = {ln.split()[0] for ln in res.out.splitlines() if ln.split()}
    with open("/proc/diskstats") as f:
        assert {ln.split()[2] for ln in f if ln.strip()} <= names


@pytest.mark.serial
def test_json_lines_one_object_per_interval():
    res = run_cli("top", "--interval", "0.15", "--count", "3", "--json")
    assert res.status == 0, res.err
    docs = [json.loads(ln) for ln in res.out.splitlines()]
    assert len(docs) == 3
    for doc in docs:
        assert 0.1 < doc["interval"] < 1.0
        assert {d["name"] for d in doc["disks"]} >= {"vda"}
        assert {"r_s", "w_s", "d_s", "f_s", "rkB_s", "aqu_sz", "util", "members"} <= set(doc["disks"][0])
        assert "eth0" in {n["name"] for n in doc["nics"]}
        cpu = doc["cpu"]
        assert len(cpu["per_cpu"]) == os.cpu_count() and "steal" in cpu["overall"]
        assert isinstance(doc["top_io"], list) and isinstance(doc["dstate"], list)


def test_root_fixture_prints_its_single_sample_and_says_rates_need_two():
    res = run_cli("top", "--root", str(fixture_root("live-md-busy-member")))
    assert res.status == 0, res.err
    assert "rates need two samples" in res.out
    assert "averages since boot" in res.out
    assert "md members: sda1 sdb1" in res.out
    assert "jbd2/md0-8" in res.out and "jbd2_journal_commit_transaction" in res.out
    assert "Top IO: unknown (capture: no live data)" in res.out
    js = run_cli("top", "--json", "--root", str(fixture_root("live-md-busy-member")))
    doc = json.loads(js.out)
    assert doc["samples"] == 1 and "two samples" in doc["note"]
    assert doc["since_boot"]["since_boot"] is True
    assert {p["pid"] for p in doc["snapshot"]["dstate"]} == {2417, 18901}


@pytest.mark.serial
def test_top_on_a_real_capture(tmp_path):
    live = HostRoot("/", record=True)
    capture_sample(live)
    cap = write_capture(live, str(tmp_path / "cap.tar.gz"))["path"]
    res = run_bin("top", "--root", cap, "--count", "5")
    assert res.returncode == 0, res.stderr
    assert "rates need two samples" in res.stdout and "vda" in res.stdout
    assert res.stdout.count("Device") == 1              # one sample: one block, not five


@pytest.mark.serial
def test_an_80_column_terminal_gets_the_essential_columns():
    narrow = run_bin("top", "--interval", "0.1", "--count", "1", "--all", env={"COLUMNS": "80"})
    assert narrow.returncode == 0, narrow.stderr
    lines = narrow.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    device = next(line for line in lines if line.startswith("Device "))
    assert device.split() == ["Device", "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await",
                              "aqu-sz", "%util"]
    assert any(line.startswith("NIC ") and "drop/s" in line for line in lines)
    # --wide (and a pipe with no COLUMNS, for awk) keeps every iostat -x column
    wide = run_bin("top", "--interval", "0.1", "--count", "1", "--wide", env={"COLUMNS": "80"})
    header = next(line for line in wide.stdout.splitlines() if line.startswith("Device "))
    assert len(header.split()) == 18 and "rrqm/s" in header


def test_bad_arguments_are_one_line_errors():
    for args, text in ((["--interval", "0"], "--interval"), (["--count", "-1"], "--count"),
                       (["--root", "/nonexistent/x"], "no such file")):
        res = run_cli("top", *args)
        assert res.status == 2 and text in res.err and res.err.count("\n") == 1, res.err


@pytest.mark.serial
def test_ctrl_c_ends_cleanly():
    proc = subprocess.Popen([inspector_bin(), "top", "--interval", "0.2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()          # the first block has begun
        assert "interval" in first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert "Traceback" not in err and err == ""


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.add(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return found


def _wait_for_reads(name: str, fio: subprocess.Popen, reads: int = 100) -> None:
    """Until the device has completed `reads` reads: fio's load is under way (it was a fixed
    0.5 s; fio's start is 0.1-0.3 s here, more on a cold or loaded machine)."""
    def completed() -> int:
        with open(f"/sys/block/{name}/stat") as f:
            return int(f.read().split()[0])
    start, deadline = completed(), time.monotonic() + slack(10)
    while completed() - start < reads:
        assert fio.poll() is None, "fio exited early"
        assert time.monotonic() < deadline, f"fio did no reads on {name}"
        time.sleep(0.02)


@pytest.mark.serial
def test_load_on_a_loop_device_shows_on_the_device_and_its_process(tmp_path):
    require_root()
    backing = tmp_path / "backing.img"
    with open(backing, "wb") as f:
        f.truncate(32 * 1024 * 1024)
    dev = subprocess.run(["losetup", "--find", "--show", str(backing)], capture_output=True,
                         text=True, check=True).stdout.strip()
    fio = None
    try:
        fio = subprocess.Popen(["fio", "--name=toptest", f"--filename={dev}", "--rw=randread",
                                "--bs=4k", "--direct=1", "--ioengine=psync", "--time_based",
                                "--runtime=4", "--output-format=terse"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_reads(os.path.basename(dev), fio)
        res = run_bin("top", "--interval", "1", "--count", "1", "--json", timeout=30)
        ours = {fio.pid} | _children(fio.pid)       # other fio runs may share the machine
    finally:
        if fio is not None:
            fio.kill()
            fio.wait()
        subprocess.run(["losetup", "-d", dev], check=False)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    loop = next(d for d in doc["disks"] if d["name"] == os.path.basename(dev))
    assert loop["r_s"] > 100 and loop["util"] > 10
    assert abs(loop["rareq_sz"] - 4.0) < 0.1        # fio's 4k reads
    fio_rows = [p for p in doc["top_io"] if p["pid"] in ours]
    assert fio_rows and {p["comm"] for p in fio_rows} == {"fio"}, (ours, doc["top_io"])
    # the fio job's block-layer reads match the device's within 10 % (same interval)
    fio_kb = max(p["read_bytes_s"] for p in fio_rows) / 1024
    assert abs(fio_kb - loop["rkB_s"]) <= 0.1 * loop["rkB_s"], (fio_kb, loop["rkB_s"])


def test_root_without_uptime_still_lists_what_it_has(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(fixture_root("live-md-busy-member"), root, symlinks=True)
    (root / "proc" / "uptime").unlink()
    res = run_cli("top", "--root", str(root))
    assert res.status == 0
    # the header folds where the root's path is long (an xdist worker's tmp_path): unfolded
    assert ("rates need two samples (uptime unknown, so no averages since boot)"
            in " ".join(res.out.split())), res.out
    assert "in D state: jbd2/md0-8 (pid 2417, wchan jbd2_journal_commit_transaction)" in res.out


# `inspector top` in an 80-column terminal keeps every line within 80 columns, whatever the
# figures and states: a veth without peer ('lowerlayerdown no-carrier'), a disk streaming 500 MB/s
# (246086.27 kB/s widened its row), a long partition name, and the capture's note. Seen on a live
# host with `ip link add qaveth0 type veth peer name qaveth1; ip link set qaveth0 up` (88 columns)
# and a dd of 3 GB (81).

UPTIME = 864012.34


def _root(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(fixture_root("live-md-busy-member"), root, symlinks=True)
    net = root / "sys/class/net/qaveth0"
    shutil.copytree(root / "sys/class/net/eth0", net, symlinks=True)
    (net / "operstate").write_text("lowerlayerdown\n")
    (net / "carrier").write_text("0\n")
    stats = (root / "proc/diskstats").read_text().splitlines()
    # sda: 987654.32 kB/s written on average since boot; a partition with a long name
    sectors = int(987654.32 * 2 * UPTIME)
    sda = stats[0].split()
    sda[9] = str(sectors)
    stats[0] = " ".join(sda)
    stats.append("259 12 nvme10n1p12 5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0")
    (root / "proc/diskstats").write_text("\n".join(stats) + "\n")
    # a thread of a multi-threaded process stuck under a long kernel function name
    task = root / "proc/18833/task/18901"
    (task / "wchan").write_text("jbd2_log_wait_commit_and_more_of_a_long_name")
    return root


def test_every_line_fits_80_columns(tmp_path):
    res = run_bin("top", "--root", str(_root(tmp_path)), "--all", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    too_long = [line for line in lines if len(line) > 80]
    assert not too_long, too_long
    nic = next(line for line in lines if line.startswith("qaveth0 "))
    assert nic.split()[-1] == "lowerlayerdown"                  # the state is still said
    sda = next(line for line in lines if line.startswith("sda "))
    wkb = sda.split()[4]                                         # wkB/s, fewer decimals
    assert len(wkb) < len("987654.32") and abs(float(wkb) - 987654.32) < 1, sda
    assert any(line.strip() == "wchan jbd2_log_wait_commit_and_more_of_a_long_name"
               for line in lines), res.stdout                   # wchan below, not cut
    part = next(line for line in lines if line.strip().startswith("nvme10n1p12"))
    assert len(part.split()) == 9, part                          # name and 8 columns
    # the capture's note is wrapped, not cut
    assert "rates need two" in res.stdout and "(like iostat's first report)." in res.stdout


def test_wide_keeps_full_precision_and_states(tmp_path):
    res = run_bin("top", "--root", str(_root(tmp_path)), "--wide", env={"COLUMNS": "80"})
    lines = res.stdout.splitlines()
    assert any(line.startswith("qaveth0 ") and line.endswith("lowerlayerdown no-carrier")
               for line in lines), res.stdout
    sda = next(line for line in lines if line.startswith("sda "))
    assert "987654.32" in sda.split(), sda


def test_a_tree_that_does_not_say_when_it_was_taken_is_not_dated_now(tmp_path):
    """A fixture or sysroot directory has no capture sidecar: `top --root` said "one sample
    taken <the current time>", a time the counters were never read at."""
    import json
    import time
    res = run_bin("top", "--root", str(_root(tmp_path)), env={"COLUMNS": "1000"})
    first, second = res.stdout.splitlines()[:2]
    assert "one sample (the tree does not say when it was taken)" in first, first
    assert second.startswith("time not recorded  averages since boot"), second
    assert time.strftime("%Y-%m-%d") not in "\n".join([first, second])
    doc = json.loads(run_bin("top", "--json", "--root", str(_root(tmp_path / "j"))).stdout)
    assert doc["snapshot"]["wall_known"] is False and doc["since_boot"]["wall_known"] is False
