"""`inspector probe io` on real targets: a loop device (O_DIRECT, read-only), files, a tmpfs
directory, a ramfs directory (no O_DIRECT: the fadvise fallback), a device that shrinks under
the probe, Ctrl-C, and the ioping-compatible output."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from conftest import inspector_bin, require_root, run_bin, run_cli, signal_when
from slowness import slack

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
    lines = [line for line in r.out.splitlines() if "request=" in line]
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
    before = Path(data_file).read_bytes()
    r = run_cli("probe", "io", data_file, "--write", "-c", "10")
    assert r.status == 2 and "refusing to write to file" in r.err
    assert Path(data_file).read_bytes() == before


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
        assert proc.stdout is not None
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
    assert proc.stdout is not None
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
    rows = [line.split() for line in r.out.splitlines() if re.match(r"^\s+[12]\s", line)]
    assert [row[0] for row in rows] == ["1", "2"]


# Defects of `inspector probe io` found side by side with ioping.

def test_ping_mode_does_not_pause_after_the_last_request(data_file):
    # ioping -c 3 -i 0.5 sleeps twice (between requests): 3 requests in ~1.0 s. The probe
    # used to sleep once more after the last one: "generated 3 requests in 1.50 s" and a run
    # half a second longer than asked.
    r = run_cli("probe", "io", data_file, "-c", "3", "-i", "0.5", "--json")
    assert r.status == 0, r.err
    summary = json.loads(r.out)["summary"]
    assert summary["total_requests"] == 3
    assert 0.95e9 <= summary["wall_ns"] < 1.25e9, summary["wall_ns"]


def test_one_request_in_ping_mode_does_not_wait_for_the_interval(data_file):
    r = run_cli("probe", "io", data_file, "-c", "1", "-i", "2", "--json")
    assert r.status == 0, r.err
    summary = json.loads(r.out)["summary"]
    assert summary["total_requests"] == 1
    assert summary["wall_ns"] < 0.5e9, summary["wall_ns"]


def test_workers_in_ping_mode_stop_after_their_share(data_file):
    # 6 requests over 2 workers: 3 each, 2 pauses each (0.4 s), not 3 (0.6 s)
    r = run_cli("probe", "io", data_file, "-c", "6", "-j", "2", "-i", "0.2", "--json")
    assert r.status == 0, r.err
    summary = json.loads(r.out)["summary"]
    assert summary["total_requests"] == 6
    assert summary["wall_ns"] < 0.55e9, summary["wall_ns"]


def test_directory_where_no_file_can_be_created_says_so():
    # /proc exists: "/proc: No such file or directory" read as if the path were missing
    proc = subprocess.run([inspector_bin(), "probe", "io", "-c", "3", "/proc"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("inspector: /proc: cannot create a temporary file: "
                                   "No such file or directory")


def test_ramp_refuses_a_count_it_would_ignore(data_file):
    # every ramp step runs for -w: "-c 100" used to be accepted and silently ignored
    r = run_cli("probe", "io", data_file, "--ramp", "-j", "2", "-c", "100")
    assert r.status == 2
    assert "-c does not apply" in r.err


def test_working_set_larger_than_free_space_is_told_in_human_sizes(tmp_path):
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    r = run_cli("probe", "io", str(tmp_path), "-c", "3", "-S", f"{free // (1 << 30) + 10}g")
    assert r.status == 2
    # "84688584704 bytes free, the working set needs 107374182400" before
    assert "bytes free" not in r.err
    assert "GiB free, the working set needs" in r.err and "(-S sets it)" in r.err
    assert os.listdir(tmp_path) == []


@pytest.fixture
def loop_4k(tmp_path):
    """A read-only loop device with 4096-byte logical blocks over a 4 MiB file."""
    from conftest import require_root
    require_root()
    backing = tmp_path / "disk.img"
    backing.write_bytes(os.urandom(4 << 20))
    dev = subprocess.run(["losetup", "-f", "--show", "-r", "-b", "4096", str(backing)],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def test_block_device_is_described_by_its_size_not_the_working_set(loop_4k):
    # like ioping: "(block device 4 MiB)" whatever -S is; it read "(block device 8 KiB)"
    r = run_cli("probe", "io", loop_4k, "-c", "3", "-S", "10k", "--json")
    assert r.status == 0, r.err
    assert json.loads(r.out)["summary"]["description"] == "block device 4 MiB"
    r = run_cli("probe", "io", loop_4k, "-c", "3", "-S", "10k", "-q")
    assert f"--- {loop_4k} (block device 4 MiB) ioping statistics ---" in r.out


def test_jobs_are_bounded(data_file):
    # every worker is a thread with its own histograms and buffer: -j 1000 peaked at 300 MB
    # RSS, and beyond 256 the threads cannot all run at once (512 took 1.3 s to start)
    # refused when parsed, one line (the bound is in --help: "1 to 256")
    r = run_cli("probe", "io", data_file, "-j", "257", "-c", "1025")
    assert r.status == 2
    assert "'257' must be at most 256" in r.err and r.err.count("\n") == 1
    r = run_cli("probe", "io", data_file, "-j", "257", "--ramp")
    assert r.status == 2 and "'257' must be at most 256" in r.err


@pytest.mark.serial       # 256 workers' share of 2 cores over 1 s: timed alone
def test_every_worker_runs_for_the_whole_run_at_the_cap(data_file):
    """At the cap every worker runs for (nearly) the whole run. At -j 1024 -w 1, threads that
    each need the GIL a few times a second could not all start: three quarters of the workers
    never got past their warm-up (their lines read '0 requests completed'), hence the cap."""
    # The installed binary, as a user runs it: in-process (run_cli), inside the serial part's
    # pytest process after a hundred tests, several workers got 0 requests in two runs in a row
    # (CI, quiet fresh clone; 0.55-0.8 s busy each here, alone, with 3 M objects on the heap or
    # with two spinning threads beside them). A second run when the first starved: the bug
    # this proves (at -j 1024 three quarters of the workers never past their warm-up) fails both.
    tries = []
    for _ in range(2):
        r = run_bin("probe", "io", data_file, "-j", "256", "-w", "1", "--json")
        assert r.returncode == 0, r.stderr
        workers = json.loads(r.stdout)["summary"]["workers"]
        assert len(workers) == 256
        requests = sorted(w["requests"] for w in workers)
        # each worker was busy for a good part of the run, not only for its tail end (the
        # bug: busy ~0)
        busy = sorted(w["busy_ns"] for w in workers)
        tries.append((requests[:5], busy[:5]))
        if requests[0] > 0 and busy[0] > 0.05e9:
            break
    else:
        pytest.fail(f"starved workers in both runs (fewest requests, least busy ns): {tries}")


def signal_once_probing(argv: list[str], signum: int) -> tuple[int, str, str, float]:
    """conftest.signal_when, once the probe's engine (a child process) has made a thousand
    reads: the run is under way (0.3-0.5 s from the start here; a fixed 1.5 s before)."""
    def engine_reading(proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + slack(10)
        while not any(_reads(child) >= 1000 for child in _children(proc.pid)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the probe's engine made no reads"
            time.sleep(0.02)
    return signal_when(argv, engine_reading, signum, timeout=30)


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children()
    except psutil.NoSuchProcess:
        return []


def _reads(proc: psutil.Process) -> int:
    try:
        return proc.io_counters().read_count
    except psutil.Error:
        return 0


@pytest.mark.serial
def test_sigterm_keeps_the_partial_results_like_probe_memcached(data_file):
    # `timeout 5 inspector probe io -w 60 ...` used to die silently: no figures at all
    import signal
    status, out, err, took = signal_once_probing(
        [inspector_bin(), "probe", "io", data_file, "-w", "30", "--json"], signal.SIGTERM)
    assert status == 128 + signal.SIGTERM, err
    assert took < 2
    summary = json.loads(out)["summary"]
    assert summary["requests"] > 0 and summary["wall_ns"] < 5e9
    assert "stopped by SIGTERM (partial results kept)" in err


@pytest.mark.serial
def test_sighup_ends_a_ramp_without_starting_the_next_step(data_file):
    import signal
    status, out, err, took = signal_once_probing(
        [inspector_bin(), "probe", "io", data_file, "--ramp", "-j", "8", "-w", "2", "-q"],
        signal.SIGHUP)
    assert status == 128 + signal.SIGHUP, err
    assert took < 2, f"the ramp went on for {took:.1f} s"
    rows = [line.split()[0] for line in out.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert rows and rows[-1] in ("1", "2"), out


def test_a_ramp_step_held_up_past_its_bound_is_not_an_interruption(data_file):
    """A step that overruns (its engine held by SIGSTOP, as a starved process is on a loaded
    box) is stopped alone and the ramp goes on: 'interrupted' and 130 were printed once the
    whole ramp's bound plus 0.5 s had passed, though nobody pressed Ctrl-C."""
    import psutil
    proc = subprocess.Popen([inspector_bin(), "probe", "io", data_file, "--cached", "--ramp",
                             "-j", "2", "-w", "0.3s"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()          # step 1's first interval: its engine runs
        assert " jobs=1 " in first, first
        held = psutil.Process(proc.pid).children()
        assert held, "no engine child"
        for child in held:
            child.suspend()
        time.sleep(1.5)         # past the step's 0.3 s + 0.5 and the ramp's 0.6 s + 0.5
        for child in held:
            child.resume()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "interrupted" not in err
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s+[12]\s", line)]
    assert [row[0] for row in rows] == ["1", "2"] and rows[1][1] != "0", out
