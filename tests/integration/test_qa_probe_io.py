"""QA defects in `inspector probe io`, found side by side with ioping."""
import json
import os
import subprocess

import pytest

from conftest import inspector_bin, run_cli, signal_after


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
    r = run_cli("probe", "io", data_file, "-j", "257", "-c", "1025")
    assert r.status == 2
    assert "jobs must be within 1..256" in r.err
    r = run_cli("probe", "io", data_file, "-j", "257", "--ramp")
    assert r.status == 2 and "jobs must be within 1..256" in r.err


def test_every_worker_runs_for_the_whole_run_at_the_cap(data_file):
    """At the cap every worker runs for (nearly) the whole run. At -j 1024 -w 1, threads that
    each need the GIL a few times a second could not all start: three quarters of the workers
    never got past their warm-up (their lines read '0 requests completed'), hence the cap."""
    r = run_cli("probe", "io", data_file, "-j", "256", "-w", "1", "--json")
    assert r.status == 0, r.err
    doc = json.loads(r.out)
    workers = doc["summary"]["workers"]
    assert len(workers) == 256 and all(w["requests"] > 0 for w in workers), \
        sorted(w["requests"] for w in workers)[:10]
    # each worker was busy for most of the run, not only for its tail end
    busy = sorted(w["busy_ns"] for w in workers)
    assert busy[0] > 0.5e9, busy[:5]


def test_sigterm_keeps_the_partial_results_like_probe_memcached(data_file):
    # `timeout 5 inspector probe io -w 60 ...` used to die silently: no figures at all
    import signal
    status, out, err, took = signal_after(
        [inspector_bin(), "probe", "io", data_file, "-w", "30", "--json"], 1.5, signal.SIGTERM,
        timeout=30)
    assert status == 128 + signal.SIGTERM, err
    assert took < 2
    summary = json.loads(out)["summary"]
    assert summary["requests"] > 0 and summary["wall_ns"] < 5e9
    assert "stopped by SIGTERM (partial results kept)" in err


def test_sighup_ends_a_ramp_without_starting_the_next_step(data_file):
    import signal
    status, out, err, took = signal_after(
        [inspector_bin(), "probe", "io", data_file, "--ramp", "-j", "8", "-w", "2", "-q"], 1.5,
        signal.SIGHUP, timeout=30)
    assert status == 128 + signal.SIGHUP, err
    assert took < 2, f"the ramp went on for {took:.1f} s"
    rows = [l.split()[0] for l in out.splitlines() if l.strip() and l.split()[0].isdigit()]
    assert rows and rows[-1] in ("1", "2"), out
