"""`inspector probe io` on real targets: a loop device (O_DIRECT, read-only), files, a tmpfs
directory, a ramfs directory (no O_DIRECT: the fadvise fallback), a device that shrinks under
the probe, Ctrl-C, and the ioping-compatible output."""
import os
import re
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager

import pytest

from conftest import inspector_bin, require_root, run_cli

SUMMARY = re.compile(
    r"--- (?P<path>\S+) \((?P<desc>[^)]*)\) ioping statistics ---\n"
    r"(?P<done>[\d.]+(?: [kMG])?) requests completed in [\d.]+ [mun]?s, [\d.]+ [KMG]?i?B (read|written), "
    r"[\d.]+(?: [kMG])? iops, [\d.]+ [KMG]?i?B/s\n"
    r"generated (?P<total>[\d.]+(?: [kMG])?) requests in [\d.]+ [mun]?s, .*\n"
    r"min/avg/max/mdev = [\d.]+ [mun]?s / [\d.]+ [mun]?s / [\d.]+ [mun]?s / [\d.]+ [mun]?s\n"
    r"p50/p90/p99/p99\.9 = [\d.]+ [mun]?s / [\d.]+ [mun]?s / [\d.]+ [mun]?s / [\d.]+ [mun]?s\n")


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(8 << 20))
    return str(path)


@contextmanager
def loop_device(backing):
    dev = subprocess.run(["losetup", "-f", "--show", str(backing)], capture_output=True,
                         text=True, check=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


@contextmanager
def mounted(fstype, options=""):
    where = tempfile.mkdtemp(prefix=f"inspector-{fstype}-")
    subprocess.run(["mount", "-t", fstype, *(["-o", options] if options else []), fstype, where],
                   check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", where], check=False)
        os.rmdir(where)


def test_loop_device_read_only_with_o_direct(tmp_path):
    require_root()
    backing = tmp_path / "disk.img"
    content = os.urandom(16 << 20)
    backing.write_bytes(content)
    with loop_device(backing) as dev:
        r = run_cli("probe", "io", dev, "-c", "300", "--json")
        assert r.status == 0, r.err
        s = r.json()["summary"]
        assert s["direct"] and s["requests"] == 299 and s["description"] == "block device 16 MiB"
        assert sum(c for _, c in r.json()["histogram"]) == 299
        for mode in ("--write", "--mixed"):
            refused = run_cli("probe", "io", dev, "-c", "10", mode)
            assert refused.status == 2
            assert "refusing to write to block device" in refused.err
    assert backing.read_bytes() == content                       # not a byte written


def test_file_probe_prints_ioping_compatible_summary(data_file):
    r = run_cli("probe", "io", data_file, "-c", "200", "-q")
    assert r.status == 0, r.err
    m = SUMMARY.search(r.out)
    assert m, r.out
    assert m["path"] == data_file and m["done"] == "199" and m["total"] == "200"
    assert re.match(r"\S+ \S+ [\d.]+ [KMGT]iB$", m["desc"])       # "ext4 /dev/vda 252.0 GiB"
    assert "O_DIRECT" in r.out


def test_ping_mode_prints_each_request_like_ioping(data_file):
    r = run_cli("probe", "io", data_file, "-c", "3", "-i", "0.01")
    assert r.status == 0, r.err
    lines = [l for l in r.out.splitlines() if "request=" in l]
    assert len(lines) == 3
    assert re.match(rf"4 KiB <<< {re.escape(data_file)} \(.*\): request=1 time=[\d.]+ [mun]?s "
                    r"\(warmup\)$", lines[0])
    assert re.match(r".*: request=3 time=[\d.]+ [mun]?s$", lines[2])


def test_json_has_summary_histogram_and_samples(data_file):
    r = run_cli("probe", "io", data_file, "-w", "0.6", "--json", "-j", "2")
    assert r.status == 0, r.err
    doc = r.json()
    s = doc["summary"]
    assert s["jobs"] == 2 and s["requests"] > 0 and s["iops_wall"] > 0
    assert set(s["percentiles_ns"]) == {"p50", "p90", "p99", "p99.9"}
    assert s["min_ns"] <= s["percentiles_ns"]["p50"] <= s["percentiles_ns"]["p99"] <= s["max_ns"]
    assert sum(c for _, c in doc["histogram"]) == s["requests"]
    assert 2 <= len(doc["samples"]) <= 4
    assert sum(x["requests"] for x in doc["samples"]) == s["requests"]


def test_directory_write_on_tmpfs_leaves_nothing(tmp_path):
    require_root()
    with mounted("tmpfs", "size=64m") as where:
        r = run_cli("probe", "io", where, "--write", "-c", "300", "-S", "4m", "--json")
        assert r.status == 0, r.err
        s = r.json()["summary"]
        assert s["writes"] == 299 and s["mode"] == "write"
        assert "tmpfs" in s["description"]
        # kernels >= 6.6 accept O_DIRECT on tmpfs; older ones take the documented fallback
        assert s["direct"] == (not r.json()["notes"])
        assert os.listdir(where) == []


def test_no_o_direct_falls_back_to_buffered_with_fadvise():
    require_root()
    with mounted("ramfs") as where:         # ramfs refuses O_DIRECT with EINVAL
        r = run_cli("probe", "io", where, "-c", "200", "-S", "2m")
        assert r.status == 0, r.err
        assert "O_DIRECT is not supported" in r.err and "POSIX_FADV_DONTNEED" in r.err
        assert "buffered" in r.out and SUMMARY.search(r.out)
        assert os.listdir(where) == []


def test_writing_to_an_existing_file_is_refused(data_file):
    before = open(data_file, "rb").read()
    r = run_cli("probe", "io", data_file, "--write", "-c", "10")
    assert r.status == 2 and "refusing to write to file" in r.err
    assert open(data_file, "rb").read() == before


def test_usage_and_preparation_errors_exit_2(tmp_path, data_file):
    missing = run_cli("probe", "io", str(tmp_path / "missing"))
    assert missing.status == 2 and "no such file" in missing.err
    bad_size = run_cli("probe", "io", data_file, "-s", "4q")
    assert bad_size.status == 2 and "invalid size" in bad_size.err
    too_few = run_cli("probe", "io", data_file, "-c", "1", "-j", "2")
    assert too_few.status == 2
    bad_type = run_cli("probe", "io", data_file, "-c", "x")
    assert bad_type.status == 2


def test_loop_device_that_shrinks_mid_run_keeps_partial_results(tmp_path):
    require_root()
    backing = tmp_path / "shrink.img"
    backing.write_bytes(os.urandom(32 << 20))
    with loop_device(backing) as dev:
        proc = subprocess.Popen([inspector_bin(), "probe", "io", dev, "-w", "10"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = proc.stdout.readline()          # the first interval sample: the run is on
        assert "iops" in first, first
        os.truncate(backing, 1 << 20)
        subprocess.run(["losetup", "-c", dev], check=True)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 1, (out, err)
    assert "(block device 32 MiB)" in out
    assert re.search(r"(short read|read failed).*request \d+", err), err
    assert "partial results kept" in err
    m = SUMMARY.search(out)
    assert m and m["done"] != "0", out


def test_ctrl_c_prints_partial_results_and_exits_130(data_file):
    proc = subprocess.Popen([inspector_bin(), "probe", "io", data_file, "-w", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()              # an interval line: the probe is running
    assert re.search(r"t=[\d.]+ s .* iops", first), first
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - t < 2
    assert proc.returncode == 130, err
    assert "interrupted (partial results kept)" in err
    assert SUMMARY.search(out), out


def test_ramp_reports_orion_style_lines(data_file):
    r = run_cli("probe", "io", data_file, "--ramp", "-j", "2", "-w", "0.3", "-q")
    assert r.status == 0, r.err
    assert re.search(r"^Maximum Small IOPS=\d+ @ Small=[12]$", r.out, re.M), r.out
    assert re.search(r"^Minimum Small Latency=[\d.]+ usecs @ Small=[12]$", r.out, re.M)
    assert re.search(r"^Knee: ", r.out, re.M)
    rows = [l.split() for l in r.out.splitlines() if re.match(r"^\s+[12]\s", l)]
    assert [row[0] for row in rows] == ["1", "2"]
